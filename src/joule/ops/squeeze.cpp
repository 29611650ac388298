// Squeeze: removes size-1 axes (axes attribute before opset 13, input from 13; none = all 1s).
#include <algorithm>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

// Output dims; nullopt when they cannot be known (no axes and a non-static dim).
std::optional<std::vector<ir::Dim>> squeeze_dims(const std::vector<ir::Dim>& in,
                                                 const std::optional<std::vector<int64_t>>& axes,
                                                 const ir::Node& node) {
  const int64_t r = static_cast<int64_t>(in.size());
  std::vector<bool> drop(in.size(), false);
  if (axes) {
    for (int64_t a : *axes) {
      const size_t n = static_cast<size_t>(normalize_axis(a, r, node));
      if (drop[n]) fail(node.where() + ": repeated axis " + std::to_string(a));
      if (in[n].is_static() && in[n].value != 1)
        fail(node.where() + ": cannot squeeze axis " + std::to_string(a) + " of size " +
             std::to_string(in[n].value));
      drop[n] = true;
    }
  } else {
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i].is_static()) return std::nullopt;
      drop[i] = in[i].value == 1;
    }
  }
  std::vector<ir::Dim> out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i]) out.push_back(in[i]);
  return out;
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  std::optional<std::vector<int64_t>> axes;
  if (c.opset < 13) {
    if (c.node.has_attr("axes")) axes = c.node.attr_ints("axes");
  } else if (c.has(1)) {
    axes = known_ints(c, 1);
    if (axes && axes->empty()) axes.reset();
    if (!axes && static_length(c, 1) != 0 && !(c.input_values.size() > 1 && c.input_values[1])) {
      const int64_t n = static_length(c, 1);
      c.out(0) = (x.has_shape && n >= 0 && n <= rank_of(x))
                     ? make_type(x.dtype, unknown_dims(x.dims.size() - static_cast<size_t>(n)))
                     : unknown_rank(x.dtype);
      return;
    }
  }
  if (!x.has_shape) {
    c.out(0) = unknown_rank(x.dtype);
    return;
  }
  auto dims = squeeze_dims(x.dims, axes, c.node);
  c.out(0) = dims ? make_type(x.dtype, *dims) : unknown_rank(x.dtype);
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  std::optional<std::vector<int64_t>> axes;
  if (c.opset < 13) {
    if (c.node.has_attr("axes")) axes = c.node.attr_ints("axes");
  } else if (c.has(1) && c.in(1).numel() > 0) {  // an empty axes tensor squeezes all, as in ORT
    axes = c.in(1).to_int_vector();
  }
  c.outputs[0] = x.reshaped(shape_of(*squeeze_dims(dims_of(x.shape()), axes, c.node)));
}

}  // namespace

extern const OpDef kOpSqueeze;
const OpDef kOpSqueeze{"Squeeze", "", 1, 2, infer, run, data_movement_cost, nullptr, true};

}  // namespace joule::ops
