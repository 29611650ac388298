// Unsqueeze: inserts size-1 axes (axes attribute before opset 13, input from 13); axes index
// the output and may be negative or unsorted.
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

std::vector<ir::Dim> unsqueeze_dims(const std::vector<ir::Dim>& in, const std::vector<int64_t>& axes,
                                    const ir::Node& node) {
  const int64_t r = static_cast<int64_t>(in.size() + axes.size());
  std::vector<bool> added(static_cast<size_t>(r), false);
  for (int64_t a : axes) {
    const size_t n = static_cast<size_t>(normalize_axis(a, r, node));
    if (added[n]) fail(node.where() + ": repeated axis " + std::to_string(a));
    added[n] = true;
  }
  std::vector<ir::Dim> out;
  size_t j = 0;
  for (size_t i = 0; i < added.size(); ++i) out.push_back(added[i] ? ir::Dim{1, ""} : in[j++]);
  return out;
}

std::vector<int64_t> attr_axes(const ir::Node& node) {
  if (!node.has_attr("axes")) fail(node.where() + ": attribute 'axes' is required");
  return node.attr_ints("axes");
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  std::optional<std::vector<int64_t>> axes;
  if (c.opset < 13) axes = attr_axes(c.node);
  else axes = known_ints(c, 1);
  if (!x.has_shape) {
    c.out(0) = unknown_rank(x.dtype);
    return;
  }
  if (!axes) {
    const int64_t n = static_length(c, 1);
    c.out(0) = n >= 0 ? make_type(x.dtype, unknown_dims(x.dims.size() + static_cast<size_t>(n)))
                      : unknown_rank(x.dtype);
    return;
  }
  c.out(0) = make_type(x.dtype, unsqueeze_dims(x.dims, *axes, c.node));
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  const auto axes = c.opset < 13 ? attr_axes(c.node) : c.in(1).to_int_vector();
  c.outputs[0] = x.reshaped(shape_of(unsqueeze_dims(dims_of(x.shape()), axes, c.node)));
}

}  // namespace

extern const OpDef kOpUnsqueeze;
const OpDef kOpUnsqueeze{"Unsqueeze", "", 1, 2, infer, run, data_movement_cost, nullptr, true};

}  // namespace joule::ops
