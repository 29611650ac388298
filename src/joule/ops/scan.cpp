// Scan: N state values and M scan inputs; the body maps (N states, one slice of each scan input)
// to (N states, K scan output slices). Opset 9 and later: the slices are taken along
// scan_input_axes (forward or reversed per scan_input_directions); the outputs are the final
// states and the K slices stacked along scan_output_axes (per scan_output_directions). Opset 8's
// batched form: input 0 is the optional sequence_lens, every state and scan input has a leading
// batch axis and is scanned along axis 1 (per `directions`); each batch item runs on its own for
// its sequence length, and scan outputs shorter than the longest are padded with zeros. The body
// runs on the reference kernels.
#include <algorithm>
#include <cstring>

#include "joule/ops/sequence_util.h"
#include "joule/ops/subgraph_util.h"
#include "joule/ops/util.h"

namespace joule::ops {
namespace {

struct Form {
  size_t first = 0;                            // 1 in opset 8 (sequence_lens comes first)
  size_t states = 0, inputs = 0, outputs = 0;  // N, M, K
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
};

Form form_of(const ir::Node& n, int64_t opset, const ir::Graph& body) {
  Form f;
  f.first = opset < 9 ? 1 : 0;
  const int64_t m = n.attr_int("num_scan_inputs", -1);
  if (m < 1 || static_cast<size_t>(m) + f.first > n.explicit_inputs())
    fail(n.where() + ": num_scan_inputs must be in [1, " + std::to_string(n.explicit_inputs() - f.first) + "]");
  f.inputs = static_cast<size_t>(m);
  f.states = n.explicit_inputs() - f.first - f.inputs;
  if (body.inputs.size() != f.states + f.inputs || body.outputs.size() < f.states)
    fail(n.where() + ": the body's inputs and outputs do not match " + std::to_string(f.states) + " states and " +
         std::to_string(f.inputs) + " scan inputs");
  f.outputs = body.outputs.size() - f.states;
  if (n.outputs.size() > body.outputs.size())
    fail(n.where() + ": lists " + std::to_string(n.outputs.size()) + " outputs, the body produces " +
         std::to_string(body.outputs.size()));
  const bool batched = f.first == 1;
  f.in_axes = batched ? std::vector<int64_t>(f.inputs, 0) : n.attr_ints("scan_input_axes", std::vector<int64_t>(f.inputs, 0));
  f.in_dirs = n.attr_ints(batched ? "directions" : "scan_input_directions", std::vector<int64_t>(f.inputs, 0));
  f.out_axes = batched ? std::vector<int64_t>(f.outputs, 0) : n.attr_ints("scan_output_axes", std::vector<int64_t>(f.outputs, 0));
  f.out_dirs = batched ? std::vector<int64_t>(f.outputs, 0) : n.attr_ints("scan_output_directions", std::vector<int64_t>(f.outputs, 0));
  if (f.in_axes.size() != f.inputs || f.in_dirs.size() != f.inputs || f.out_axes.size() != f.outputs ||
      f.out_dirs.size() != f.outputs)
    fail(n.where() + ": scan axes/directions lists must have one entry per scan input/output");
  return f;
}

void infer(InferContext& c) {
  const ir::Graph& body = c.node.attr_graph("body");
  const Form f = form_of(c.node, c.opset, body);
  const size_t lead = f.first;  // the batch axis of opset 8 comes before the scan axis
  ir::Dim seq, batch;
  const ir::TensorType& x0 = c.in(f.first + f.states);
  if (x0.has_shape) {
    if (x0.dims.size() < lead + 1) fail(c.node.where() + ": scan input 0 has no scan axis: " + x0.str());
    seq = x0.dims[lead + static_cast<size_t>(normalize_axis(f.in_axes[0], static_cast<int64_t>(x0.dims.size() - lead), c.node))];
    if (lead) batch = x0.dims[0];
  }
  for (size_t i = 0; i < c.output_types.size() && i < f.states + f.outputs; ++i) {
    if (i < f.states) {
      c.out(i) = c.in(f.first + i);
      continue;
    }
    ir::TensorType t = subgraph::output_type(body, i);
    if (t.has_shape) {
      const int64_t axis = normalize_axis(f.out_axes[i - f.states], static_cast<int64_t>(t.dims.size()) + 1, c.node);
      t.dims.insert(t.dims.begin() + axis, seq);
      if (lead) t.dims.insert(t.dims.begin(), batch);
    }
    c.out(i) = t;
  }
}

// One scan over `seq` steps: states in, final states and the stacked scan outputs out.
std::vector<Tensor> scan(const KernelContext& c, const ir::Graph& body, const Form& f, std::vector<Tensor> states,
                         const std::vector<Tensor>& xs, int64_t seq) {
  std::vector<int64_t> axes;
  for (size_t j = 0; j < f.inputs; ++j) {
    axes.push_back(normalize_axis(f.in_axes[j], xs[j].rank(), c.node));
    const int64_t len = xs[j].dim(static_cast<int>(axes.back()));
    if (seq < 0) seq = len;
    if (len != seq)
      fail(c.node.where() + ": scan inputs have different lengths (" + std::to_string(seq) + " and " + std::to_string(len) + ")");
  }
  std::vector<std::vector<Tensor>> slices(f.outputs);
  for (int64_t t = 0; t < seq; ++t) {
    std::vector<Tensor> in = states;
    for (size_t j = 0; j < f.inputs; ++j) in.push_back(subgraph::take(xs[j], axes[j], f.in_dirs[j] ? seq - 1 - t : t));
    std::vector<Tensor> out = subgraph::run(c, body, in);
    for (size_t i = 0; i < f.states; ++i) states[i] = std::move(out[i]);
    for (size_t k = 0; k < f.outputs; ++k) slices[k].push_back(std::move(out[f.states + k]));
  }
  std::vector<Tensor> result = std::move(states);
  for (size_t k = 0; k < f.outputs; ++k) {
    std::vector<Tensor>& parts = slices[k];
    if (f.out_dirs[k]) std::reverse(parts.begin(), parts.end());
    const ir::TensorType d = subgraph::output_type(body, f.states + k);
    const int64_t rank = parts.empty() ? (d.has_shape ? static_cast<int64_t>(d.dims.size()) : 0) : parts[0].rank();
    const int64_t axis = normalize_axis(f.out_axes[k], rank + 1, c.node);
    Shape empty = d.is_static() ? d.static_shape() : Shape(static_cast<size_t>(rank), 0);
    empty.insert(empty.begin() + axis, 0);
    result.push_back(subgraph::stack(parts, axis, empty, d.dtype == DType::Undefined ? DType::Float32 : d.dtype));
  }
  return result;
}

// Opset 8: every batch item scanned alone, the results stacked along the batch axis (scan
// outputs zero-padded to the longest sequence).
std::vector<Tensor> scan_batched(const KernelContext& c, const ir::Graph& body, const Form& f) {
  const Tensor& x0 = c.in(1 + f.states);
  if (x0.rank() < 2) fail(c.node.where() + ": batched scan inputs need [batch, sequence, ...], got " + x0.describe());
  const int64_t batch = x0.dim(0), longest = x0.dim(1);
  std::vector<int64_t> lens(static_cast<size_t>(batch), longest);
  if (c.has(0)) {
    const Tensor& l = c.in(0);
    if (l.numel() != batch) fail(c.node.where() + ": sequence_lens has " + std::to_string(l.numel()) + " entries for batch " + std::to_string(batch));
    for (int64_t b = 0; b < batch; ++b) {
      lens[static_cast<size_t>(b)] = l.value_as_int(b);
      if (lens[static_cast<size_t>(b)] < 0 || lens[static_cast<size_t>(b)] > longest)
        fail(c.node.where() + ": sequence_lens[" + std::to_string(b) + "] is outside [0, " + std::to_string(longest) + "]");
    }
  }
  std::vector<std::vector<Tensor>> per_item(f.states + f.outputs);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> states, xs;
    for (size_t i = 0; i < f.states; ++i) {
      if (c.in(1 + i).rank() < 1 || c.in(1 + i).dim(0) != batch)
        fail(c.node.where() + ": state " + std::to_string(i) + " " + c.in(1 + i).describe() + " lacks the batch axis of " + std::to_string(batch));
      states.push_back(subgraph::take(c.in(1 + i), 0, b));
    }
    for (size_t j = 0; j < f.inputs; ++j) {
      const Tensor& x = c.in(1 + f.states + j);
      if (x.rank() < 2 || x.dim(0) != batch || x.dim(1) != longest)
        fail(c.node.where() + ": scan input " + std::to_string(j) + " " + x.describe() + " is not [" + std::to_string(batch) + ", " +
             std::to_string(longest) + ", ...]");
      Tensor item = subgraph::take(x, 0, b);
      // Only the first lens[b] steps take part (reversed directions read them from their end).
      if (lens[static_cast<size_t>(b)] < longest) item = seq::slice_axis(item, 0, 0, lens[static_cast<size_t>(b)]);
      xs.push_back(std::move(item));
    }
    std::vector<Tensor> r = scan(c, body, f, std::move(states), xs, lens[static_cast<size_t>(b)]);
    for (size_t i = 0; i < r.size(); ++i) per_item[i].push_back(std::move(r[i]));
  }
  std::vector<Tensor> result;
  for (size_t i = 0; i < per_item.size(); ++i) {
    std::vector<Tensor>& parts = per_item[i];
    if (i >= f.states) {  // pad every item's [len, ...] to [longest, ...]
      for (Tensor& p : parts) {
        if (p.dim(0) == longest) continue;
        Shape s = p.shape();
        s[0] = longest;
        Tensor padded(p.dtype(), s);
        if (p.nbytes()) std::memcpy(padded.raw(), p.raw(), p.nbytes());
        p = padded;
      }
    }
    result.push_back(subgraph::stack(parts, 0, Shape{0}, DType::Float32));
  }
  return result;
}

void run(KernelContext& c) {
  const ir::Graph& body = c.node.attr_graph("body");
  const Form f = form_of(c.node, c.opset, body);
  std::vector<Tensor> result;
  if (f.first) {
    result = scan_batched(c, body, f);
  } else {
    std::vector<Tensor> states, xs;
    for (size_t i = 0; i < f.states; ++i) states.push_back(c.in(i));
    for (size_t j = 0; j < f.inputs; ++j) xs.push_back(c.in(f.states + j));
    result = scan(c, body, f, std::move(states), xs, -1);
  }
  for (size_t i = 0; i < c.outputs.size() && i < result.size(); ++i) c.outputs[i] = std::move(result[i]);
}

}  // namespace

extern const OpDef kOpScan;
const OpDef kOpScan{"Scan", "", 1, -1, infer, run};

}  // namespace joule::ops
