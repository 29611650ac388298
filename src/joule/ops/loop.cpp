// Loop: inputs M (trip count, optional), cond (optional) and N loop-carried values; the body
// maps (iteration, cond, N values) to (cond, N values, K scan outputs). Outputs: the N final
// values, then each scan output stacked over the iterations along a new axis 0. Runs while
// i < M and cond (ONNX's for / while / do-while forms). The body runs on the reference kernels.
#include <cstdlib>
#include <limits>

#include "joule/ops/subgraph_util.h"
#include "joule/ops/util.h"

namespace joule::ops {
namespace {

// N (loop-carried values) and K (scan outputs) of the node.
std::pair<size_t, size_t> counts(const ir::Node& n, const ir::Graph& body) {
  const size_t carried = n.explicit_inputs() - 2;
  if (body.inputs.size() != carried + 2)
    fail(n.where() + ": the body takes " + std::to_string(body.inputs.size()) + " inputs, expected " + std::to_string(carried + 2) +
         " (iteration, condition and " + std::to_string(carried) + " loop-carried values)");
  if (body.outputs.size() < carried + 1)
    fail(n.where() + ": the body has " + std::to_string(body.outputs.size()) + " outputs, expected at least " + std::to_string(carried + 1));
  if (n.outputs.size() > body.outputs.size() - 1)
    fail(n.where() + ": lists " + std::to_string(n.outputs.size()) + " outputs, the body produces " +
         std::to_string(body.outputs.size() - 1) + " (after the condition)");
  return {carried, body.outputs.size() - 1 - carried};
}

void infer(InferContext& c) {
  const ir::Graph& body = c.node.attr_graph("body");
  const auto [carried, scans] = counts(c.node, body);
  for (size_t i = 0; i < c.output_types.size() && i < carried + scans; ++i) {
    const ir::TensorType declared = subgraph::output_type(body, 1 + i);
    ir::TensorType t;
    if (i < carried) {  // the initial value's type; a shape only where the body declares one
      // A body may turn the carried value's kind (an optional sequence becomes a sequence): the
      // kind the body declares for its output wins.
      const ir::TensorType& kind_of = declared.dtype != DType::Undefined ? declared : c.in(2 + i);
      t.kind = kind_of.kind;
      t.held = kind_of.held;
      t.dtype = c.in(2 + i).dtype;
      t.has_shape = declared.has_shape;
      t.dims = declared.dims;
    } else {
      if (!declared.is_tensor()) fail(c.node.where() + ": scan output " + std::to_string(i - carried) + " must be a tensor, got " + declared.str());
      t.dtype = declared.dtype;
      t.has_shape = declared.has_shape;
      if (t.has_shape) {
        t.dims = {ir::Dim{}};
        t.dims.insert(t.dims.end(), declared.dims.begin(), declared.dims.end());
      }
    }
    c.out(i) = t;
  }
}

// ONNX lets a Loop run without bound (no trip count and a condition that stays true, or a trip
// count near 2^63). $JOULE_LOOP_LIMIT (iterations) stops such a loop with an error instead: the
// fuzz targets set 10000, a service running models it does not know can set its own. Unset or
// not a positive integer: no limit.
int64_t loop_limit() {
  static const int64_t limit = [] {
    const char* e = std::getenv("JOULE_LOOP_LIMIT");
    if (!e || !*e) return std::numeric_limits<int64_t>::max();
    char* end = nullptr;
    const long long v = std::strtoll(e, &end, 10);
    return end != e && *end == 0 && v > 0 ? static_cast<int64_t>(v) : std::numeric_limits<int64_t>::max();
  }();
  return limit;
}

void run(KernelContext& c) {
  const ir::Graph& body = c.node.attr_graph("body");
  const auto [carried, scans] = counts(c.node, body);
  const int64_t trips = c.has(0) ? c.in(0).value_as_int(0) : std::numeric_limits<int64_t>::max();
  bool cond = c.has(1) ? c.in(1).value_as_double(0) != 0 : true;
  std::vector<Tensor> values;
  for (size_t i = 0; i < carried; ++i) values.push_back(c.in(2 + i));
  std::vector<std::vector<Tensor>> stacked(scans);
  for (int64_t i = 0; i < trips && cond; ++i) {
    if (i == loop_limit())
      fail(c.node.where() + ": the Loop ran " + std::to_string(i) + " iterations, the limit JOULE_LOOP_LIMIT sets");
    std::vector<Tensor> in = {Tensor::scalar<int64_t>(i), Tensor::scalar<bool>(cond)};
    in.insert(in.end(), values.begin(), values.end());
    std::vector<Tensor> out = subgraph::run(c, body, in);
    cond = out[0].value_as_double(0) != 0;
    for (size_t j = 0; j < carried; ++j) values[j] = std::move(out[1 + j]);
    for (size_t k = 0; k < scans; ++k) stacked[k].push_back(std::move(out[1 + carried + k]));
  }
  for (size_t i = 0; i < c.outputs.size() && i < carried + scans; ++i) {
    if (i < carried) {
      c.outputs[i] = values[i];
      continue;
    }
    const ir::TensorType d = subgraph::output_type(body, 1 + i);
    Shape empty = {0};  // no iteration: [0, element shape as declared]
    if (d.is_static()) for (int64_t v : d.static_shape()) empty.push_back(v);
    c.outputs[i] = subgraph::stack(stacked[i - carried], 0, empty, d.dtype == DType::Undefined ? DType::Float32 : d.dtype);
  }
}

}  // namespace

extern const OpDef kOpLoop;
const OpDef kOpLoop{"Loop", "", 2, -1, infer, run, nullptr, nullptr, false, true};

}  // namespace joule::ops
