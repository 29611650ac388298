// If: runs then_branch or else_branch (graph attributes) by the value of `cond`; the outputs
// are the branch's (tensors, sequences or optionals). Outer-scope values the branches read arrive as the node's captured inputs.
// Shape inference takes the branch a constant condition selects, else merges what both
// branches declare (a dim both agree on is kept). The branches run on the reference kernels.
#include "joule/ops/subgraph_util.h"
#include "joule/ops/util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  const ir::Graph& th = c.node.attr_graph("then_branch");
  const ir::Graph& el = c.node.attr_graph("else_branch");
  const size_t n = c.output_types.size();
  if (th.outputs.size() < n || el.outputs.size() < n)
    fail(c.node.where() + ": " + std::to_string(n) + " outputs, but the branches have " + std::to_string(th.outputs.size()) +
         " and " + std::to_string(el.outputs.size()));
  const Tensor* cond = c.input_values.empty() ? nullptr : c.input_values[0];
  for (size_t i = 0; i < n; ++i) {
    const ir::TensorType t = subgraph::output_type(th, i), e = subgraph::output_type(el, i);
    if (cond && cond->numel() == 1) {
      c.out(i) = cond->value_as_double(0) != 0 ? t : e;
      continue;
    }
    ir::TensorType m;
    const ir::TensorType& known = t.dtype != DType::Undefined ? t : e;
    m.dtype = known.dtype;
    m.kind = known.kind;
    m.held = known.held;
    if (t.has_shape && e.has_shape && t.dims.size() == e.dims.size()) {
      m.has_shape = true;
      for (size_t d = 0; d < t.dims.size(); ++d) m.dims.push_back(t.dims[d] == e.dims[d] ? t.dims[d] : ir::Dim{});
    }
    c.out(i) = m;
  }
}

void run(KernelContext& c) {
  const Tensor& cond = c.in(0);
  if (cond.numel() != 1) fail(c.node.where() + ": cond must hold one value, got " + cond.describe());
  const bool taken = cond.value_as_double(0) != 0;
  std::vector<Tensor> out = subgraph::run(c, c.node.attr_graph(taken ? "then_branch" : "else_branch"), {});
  for (size_t i = 0; i < c.outputs.size() && i < out.size(); ++i) c.outputs[i] = std::move(out[i]);
}

}  // namespace

extern const OpDef kOpIf;
const OpDef kOpIf{"If", "", 1, 1, infer, run, nullptr, nullptr, false, true};

}  // namespace joule::ops
