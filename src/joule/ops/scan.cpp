// Scan (opset 9 and later): N state values and M scan inputs; the body maps (N states, one slice
// of each scan input) to (N states, K scan output slices). The slices are taken along
// scan_input_axes (forward or reversed per scan_input_directions); the outputs are the final
// states and the K slices stacked along scan_output_axes (per scan_output_directions). Opset 8's
// batched form is refused. The body runs on the reference kernels.
#include <algorithm>

#include "joule/ops/subgraph_util.h"
#include "joule/ops/util.h"

namespace joule::ops {
namespace {

struct Form {
  size_t states = 0, inputs = 0, outputs = 0;  // N, M, K
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
};

Form form_of(const ir::Node& n, const ir::Graph& body) {
  Form f;
  const int64_t m = n.attr_int("num_scan_inputs", -1);
  if (m < 1 || static_cast<size_t>(m) > n.explicit_inputs())
    fail(n.where() + ": num_scan_inputs must be in [1, " + std::to_string(n.explicit_inputs()) + "]");
  f.inputs = static_cast<size_t>(m);
  f.states = n.explicit_inputs() - f.inputs;
  if (body.inputs.size() != f.states + f.inputs || body.outputs.size() < f.states)
    fail(n.where() + ": the body's inputs and outputs do not match " + std::to_string(f.states) + " states and " +
         std::to_string(f.inputs) + " scan inputs");
  f.outputs = body.outputs.size() - f.states;
  f.in_axes = n.attr_ints("scan_input_axes", std::vector<int64_t>(f.inputs, 0));
  f.in_dirs = n.attr_ints("scan_input_directions", std::vector<int64_t>(f.inputs, 0));
  f.out_axes = n.attr_ints("scan_output_axes", std::vector<int64_t>(f.outputs, 0));
  f.out_dirs = n.attr_ints("scan_output_directions", std::vector<int64_t>(f.outputs, 0));
  if (f.in_axes.size() != f.inputs || f.in_dirs.size() != f.inputs || f.out_axes.size() != f.outputs ||
      f.out_dirs.size() != f.outputs)
    fail(n.where() + ": scan axes/directions lists must have one entry per scan input/output");
  return f;
}

void infer(InferContext& c) {
  const ir::Graph& body = c.node.attr_graph("body");
  const Form f = form_of(c.node, body);
  ir::Dim seq;
  const ir::TensorType& x0 = c.in(f.states);
  if (x0.has_shape) seq = x0.dims[static_cast<size_t>(normalize_axis(f.in_axes[0], static_cast<int64_t>(x0.dims.size()), c.node))];
  for (size_t i = 0; i < c.output_types.size() && i < f.states + f.outputs; ++i) {
    if (i < f.states) {
      c.out(i) = c.in(i);
      continue;
    }
    ir::TensorType t = subgraph::output_type(body, i);
    if (t.has_shape) {
      const int64_t axis = normalize_axis(f.out_axes[i - f.states], static_cast<int64_t>(t.dims.size()) + 1, c.node);
      t.dims.insert(t.dims.begin() + axis, seq);
    }
    c.out(i) = t;
  }
}

void run(KernelContext& c) {
  const ir::Graph& body = c.node.attr_graph("body");
  const Form f = form_of(c.node, body);
  std::vector<Tensor> states;
  for (size_t i = 0; i < f.states; ++i) states.push_back(c.in(i));
  std::vector<int64_t> axes;
  int64_t seq = -1;
  for (size_t j = 0; j < f.inputs; ++j) {
    const Tensor& x = c.in(f.states + j);
    axes.push_back(normalize_axis(f.in_axes[j], x.rank(), c.node));
    const int64_t len = x.dim(static_cast<int>(axes.back()));
    if (seq >= 0 && len != seq)
      fail(c.node.where() + ": scan inputs have different lengths (" + std::to_string(seq) + " and " + std::to_string(len) + ")");
    seq = len;
  }
  std::vector<std::vector<Tensor>> slices(f.outputs);
  for (int64_t t = 0; t < seq; ++t) {
    std::vector<Tensor> in = states;
    for (size_t j = 0; j < f.inputs; ++j)
      in.push_back(subgraph::take(c.in(f.states + j), axes[j], f.in_dirs[j] ? seq - 1 - t : t));
    std::vector<Tensor> out = subgraph::run(c, body, in);
    for (size_t i = 0; i < f.states; ++i) states[i] = std::move(out[i]);
    for (size_t k = 0; k < f.outputs; ++k) slices[k].push_back(std::move(out[f.states + k]));
  }
  for (size_t i = 0; i < c.outputs.size() && i < f.states + f.outputs; ++i) {
    if (i < f.states) {
      c.outputs[i] = states[i];
      continue;
    }
    const size_t k = i - f.states;
    std::vector<Tensor>& parts = slices[k];
    if (f.out_dirs[k]) std::reverse(parts.begin(), parts.end());
    const ir::TensorType d = subgraph::output_type(body, i);
    const int64_t rank = parts.empty() ? (d.has_shape ? static_cast<int64_t>(d.dims.size()) : 0) : parts[0].rank();
    const int64_t axis = normalize_axis(f.out_axes[k], rank + 1, c.node);
    Shape empty = d.is_static() ? d.static_shape() : Shape(static_cast<size_t>(rank), 0);
    empty.insert(empty.begin() + axis, 0);
    c.outputs[i] = subgraph::stack(parts, axis, empty, d.dtype == DType::Undefined ? DType::Float32 : d.dtype);
  }
}

std::string check(const ir::Node&, int64_t opset) {
  return opset < 9 ? "Scan before opset 9 (batched, with sequence_lens) is not supported" : "";
}

}  // namespace

extern const OpDef kOpScan;
const OpDef kOpScan{"Scan", "", 1, -1, infer, run, nullptr, check};

}  // namespace joule::ops
