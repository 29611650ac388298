// SequenceMap (opset 17): the body graph applied to every position of the input sequence. Body
// input j is, at position i, item i of node input j when that input is a sequence (every one
// as long as the first), or the tensor itself; each body output collects into a sequence.
#include "joule/ops/sequence_util.h"
#include "joule/ops/subgraph_util.h"
#include "joule/ops/util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  seq::sequence_input(c, 0);
  const ir::Graph& body = c.node.attr_graph("body");
  if (body.inputs.size() != c.node.explicit_inputs())
    fail(c.node.where() + ": the body takes " + std::to_string(body.inputs.size()) + " inputs, the node gives " +
         std::to_string(c.node.explicit_inputs()));
  for (size_t i = 0; i < c.output_types.size(); ++i)
    c.out(i) = subgraph::output_type(body, i).with_kind(ValueKind::Sequence);
}

void run(KernelContext& c) {
  const ir::Graph& body = c.node.attr_graph("body");
  const size_t given = c.node.explicit_inputs();
  const size_t n = seq::sequence_value(c, 0).items().size();
  for (size_t j = 0; j < given; ++j)
    if (c.in(j).kind() == ValueKind::Sequence && c.in(j).items().size() != n)
      fail(c.node.where() + ": input " + std::to_string(j) + " has " + std::to_string(c.in(j).items().size()) +
           " items, the first sequence " + std::to_string(n));
  std::vector<std::vector<Tensor>> collected(c.outputs.size());
  for (size_t i = 0; i < n; ++i) {
    std::vector<Tensor> in;
    for (size_t j = 0; j < given; ++j) in.push_back(c.in(j).kind() == ValueKind::Sequence ? c.in(j).items()[i] : c.in(j));
    std::vector<Tensor> out = subgraph::run(c, body, in);
    for (size_t k = 0; k < collected.size() && k < out.size(); ++k) collected[k].push_back(std::move(out[k]));
  }
  for (size_t k = 0; k < collected.size(); ++k) {
    DType t = subgraph::output_type(body, k).dtype;
    if (!collected[k].empty()) t = collected[k][0].dtype();
    c.outputs[k] = Tensor::sequence(t == DType::Undefined ? DType::Float32 : t, std::move(collected[k]));
  }
}

}  // namespace

extern const OpDef kOpSequenceMap;
const OpDef kOpSequenceMap{"SequenceMap", "", 1, -1, infer, run, nullptr, nullptr, false, true};

}  // namespace joule::ops
