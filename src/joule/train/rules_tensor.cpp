// Gradient rules of the data-movement and reduction ops: reshapes give the gradient the input's
// shape back, Transpose the inverse permutation, Concat/Split slice and concatenate, Slice and
// Gather scatter into zeros (joule.SliceGrad, joule.GatherGrad), Expand and the reductions sum
// or spread along the broadcast axes.
#include "joule/core/error.h"
#include "joule/train/grad.h"

namespace joule::train {
namespace {

void reshape_rule(GradContext& c) { c.dx[0] = c.b.reshape(c.dy[0], c.b.shape(c.in(0))); }

void transpose_rule(GradContext& c) {
  const int64_t r = static_cast<int64_t>(c.b.shape(c.in(0)).size());
  std::vector<int64_t> perm = c.node.attr_ints("perm");
  if (perm.empty())
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  c.dx[0] = c.b.transpose(c.dy[0], inv);
}

// [start, end) of `axis` of v, as an ONNX Slice of the graph's opset.
std::string slice(GradBuilder& b, const std::string& v, int64_t axis, int64_t start, int64_t end) {
  if (b.graph().opset("") >= 10) return b.add1("Slice", {v, b.ints({start}), b.ints({end}), b.ints({axis})});
  return b.add1("Slice", {v}, {{"starts", std::vector<int64_t>{start}}, {"ends", std::vector<int64_t>{end}},
                               {"axes", std::vector<int64_t>{axis}}});
}

int64_t axis_of(GradContext& c, const std::string& value, int64_t def) {
  const int64_t r = static_cast<int64_t>(c.b.shape(value).size());
  const int64_t a = c.node.attr_int("axis", def);
  return a < 0 ? a + r : a;
}

void concat_rule(GradContext& c) {
  const int64_t axis = axis_of(c, c.out(0), 0);
  int64_t at = 0;
  for (size_t i = 0; i < c.node.inputs.size(); ++i) {
    const int64_t len = c.b.shape(c.in(i))[static_cast<size_t>(axis)];
    if (c.need[i]) c.dx[i] = slice(c.b, c.dy[0], axis, at, at + len);
    at += len;
  }
}

void split_rule(GradContext& c) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < c.node.outputs.size(); ++i) parts.push_back(c.dy_or_zeros(i));
  c.dx[0] = c.b.add1("Concat", parts, {{"axis", axis_of(c, c.in(0), 0)}});
}

std::vector<int64_t> constant_ints(GradContext& c, size_t i) {
  if (i >= c.node.inputs.size() || c.node.inputs[i].empty()) return {};
  const Tensor* t = c.b.constant_value(c.in(i));
  if (!t) fail_unsupported(c.node.where() + ": the gradient needs input " + std::to_string(i) + " to be a constant");
  return t->to_int_vector();
}

void slice_rule(GradContext& c) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.b.graph().opset("") >= 10) {
    starts = constant_ints(c, 1);
    ends = constant_ints(c, 2);
    axes = constant_ints(c, 3);
    steps = constant_ints(c, 4);
  } else {
    starts = c.node.attr_ints("starts");
    ends = c.node.attr_ints("ends");
    axes = c.node.attr_ints("axes");
  }
  c.dx[0] = c.b.add1("SliceGrad", {c.dy[0]},
                     {{"input_shape", c.b.shape(c.in(0))}, {"starts", starts}, {"ends", ends}, {"axes", axes},
                      {"steps", steps}},
                     "joule");
}

void gather_rule(GradContext& c) {
  c.dx[0] = c.b.add1("GatherGrad", {c.dy[0], c.in(1)},
                     {{"input_shape", c.b.shape(c.in(0))}, {"axis", axis_of(c, c.in(0), 0)}}, "joule");
}

// Constant-mode Pad with pads >= 0: the gradient is dY without the padding.
void pad_rule(GradContext& c) {
  if (c.node.attr_string("mode", "constant") != "constant")
    fail_unsupported(c.node.where() + ": the gradient of Pad in mode '" + c.node.attr_string("mode", "") + "'");
  const Shape xs = c.b.shape(c.in(0));
  const int64_t r = static_cast<int64_t>(xs.size());
  std::vector<int64_t> pads = c.b.graph().opset("") >= 11 ? constant_ints(c, 1) : c.node.attr_ints("pads");
  std::vector<int64_t> axes = constant_ints(c, 3);
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  if (pads.size() != 2 * axes.size()) fail(c.node.where() + ": pads do not match the axes");
  std::vector<int64_t> starts, ends, ax;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
    if (pads[i] < 0 || pads[i + axes.size()] < 0) fail_unsupported(c.node.where() + ": the gradient of a negative pad");
    if (pads[i] == 0 && pads[i + axes.size()] == 0) continue;
    starts.push_back(pads[i]);
    ends.push_back(pads[i] + xs[static_cast<size_t>(a)]);
    ax.push_back(a);
  }
  if (ax.empty()) {
    c.dx[0] = c.dy[0];
  } else if (c.b.graph().opset("") >= 10) {
    c.dx[0] = c.b.add1("Slice", {c.dy[0], c.b.ints(starts), c.b.ints(ends), c.b.ints(ax)});
  } else {
    c.dx[0] = c.b.add1("Slice", {c.dy[0]}, {{"starts", starts}, {"ends", ends}, {"axes", ax}});
  }
}

void expand_rule(GradContext& c) { c.dx[0] = c.b.sum_to(c.dy[0], c.b.shape(c.in(0))); }

// ReduceSum / ReduceMean: the gradient spread back over the reduced axes.
template <bool Mean>
void reduce_rule(GradContext& c) {
  const Shape xs = c.b.shape(c.in(0));
  const int64_t r = static_cast<int64_t>(xs.size());
  std::vector<int64_t> axes = c.node.has_attr("axes") ? c.node.attr_ints("axes") : constant_ints(c, 1);
  if (axes.empty() && c.node.attr_int("noop_with_empty_axes", 0) != 0) {
    c.dx[0] = c.dy[0];
    return;
  }
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  Shape keep = xs;
  double count = 1;
  for (int64_t a : axes) {
    const size_t u = static_cast<size_t>(a < 0 ? a + r : a);
    count *= static_cast<double>(xs[u]);
    keep[u] = 1;
  }
  std::string g = c.b.reshape(c.dy[0], keep);
  if (Mean) g = c.b.add1("Mul", {g, c.b.scalar(1.0 / count, c.b.dtype(g))});
  c.dx[0] = keep == xs ? g : c.b.add1("Expand", {g, c.b.ints(xs)});
}

}  // namespace

const std::vector<GradDef>& tensor_grads() {
  static const std::vector<GradDef> rules = {
      {"", "Reshape", reshape_rule},     {"", "Flatten", reshape_rule},
      {"", "Squeeze", reshape_rule},     {"", "Unsqueeze", reshape_rule},
      {"", "Transpose", transpose_rule}, {"", "Concat", concat_rule},
      {"", "Split", split_rule},         {"", "Slice", slice_rule},
      {"", "Gather", gather_rule},       {"", "Expand", expand_rule},
      {"", "Pad", pad_rule},
      {"", "ReduceSum", reduce_rule<false>}, {"", "ReduceMean", reduce_rule<true>},
  };
  return rules;
}

}  // namespace joule::train
