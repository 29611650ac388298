// OneHot: out has a new axis of size depth; out[..., i, ...] = values[1] where i == index
// (negative indices count from depth), values[0] elsewhere.
#include <cmath>
#include <cstring>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

size_t onehot_axis(const ir::Node& node, int64_t in_rank) {
  return static_cast<size_t>(normalize_axis(node.attr_int("axis", -1), in_rank + 1, node));
}

std::vector<ir::Dim> out_dims(const std::vector<ir::Dim>& in, ir::Dim depth, const ir::Node& node) {
  std::vector<ir::Dim> out = in;
  out.insert(out.begin() + static_cast<long>(onehot_axis(node, static_cast<int64_t>(in.size()))), depth);
  return out;
}

int64_t depth_value(const Tensor& t, const ir::Node& node) {
  if (t.numel() != 1) fail(node.where() + ": depth must have exactly one element");
  const int64_t d = static_cast<int64_t>(std::floor(t.value_as_double(0)));
  if (d < 1) fail(node.where() + ": depth must be positive, got " + std::to_string(d));
  return d;
}

void infer(InferContext& c) {
  const ir::TensorType& idx = c.in(0);
  const DType dt = c.in(2).dtype;
  if (!idx.has_shape) {
    c.out(0) = unknown_rank(dt);
    return;
  }
  ir::Dim depth{};
  if (c.input_values.size() > 1 && c.input_values[1]) depth = ir::Dim{depth_value(*c.input_values[1], c.node), ""};
  c.out(0) = make_type(dt, out_dims(idx.dims, depth, c.node));
}

void run(KernelContext& c) {
  const Tensor& idx = c.in(0);
  const Tensor& values = c.in(2);
  if (values.numel() != 2) fail(c.node.where() + ": values must have two elements [off, on]");
  const int64_t depth = depth_value(c.in(1), c.node);
  const Shape out_shape = shape_of(out_dims(dims_of(idx.shape()), ir::Dim{depth, ""}, c.node));
  const size_t axis = onehot_axis(c.node, idx.rank());
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= idx.shape()[d];
  for (size_t d = axis; d < idx.shape().size(); ++d) inner *= idx.shape()[d];
  const Tensor off = one_element(values);
  Tensor out = filled(off, out_shape);
  const size_t es = dtype_size(values.dtype());
  const auto* on = static_cast<const std::byte*>(values.raw()) + es;
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t v = static_cast<int64_t>(std::floor(idx.value_as_double(o * inner + i)));
      if (v < 0) v += depth;
      if (v < 0 || v >= depth) continue;
      std::memcpy(dst + static_cast<size_t>((o * depth + v) * inner + i) * es, on, es);
    }
  c.outputs[0] = out;
}

}  // namespace

extern const OpDef kOpOneHot;
const OpDef kOpOneHot{"OneHot", "", 3, 3, infer, run, data_movement_cost};

}  // namespace joule::ops
