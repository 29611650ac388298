// Compress: keeps the slices along `axis` (or of the flattened input) whose condition is true;
// a condition shorter than the axis counts as false past its end.
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

// Kept indices along an axis of size dim.
std::vector<int64_t> kept(const Tensor& cond, int64_t dim, const ir::Node& node) {
  if (cond.rank() != 1) fail(node.where() + ": condition must be 1-D");
  std::vector<int64_t> k;
  for (int64_t i = 0; i < cond.numel(); ++i) {
    if (cond.value_as_int(i) == 0) continue;
    if (i >= dim) fail(node.where() + ": condition selects index " + std::to_string(i) +
                       " beyond dimension " + std::to_string(dim));
    k.push_back(i);
  }
  return k;
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  const Tensor* cond = c.input_values.size() > 1 ? c.input_values[1] : nullptr;
  if (!c.node.has_attr("axis")) {
    ir::Dim n{};
    if (cond && x.is_static()) n = ir::Dim{static_cast<int64_t>(kept(*cond, shape_numel(x.static_shape()), c.node).size()), ""};
    c.out(0) = make_type(x.dtype, {n});
    return;
  }
  if (!x.has_shape) {
    c.out(0) = unknown_rank(x.dtype);
    return;
  }
  const size_t axis = static_cast<size_t>(normalize_axis(c.node.attr_int("axis", 0), rank_of(x), c.node));
  auto dims = x.dims;
  dims[axis] = ir::Dim{};
  if (cond && x.dims[axis].is_static())
    dims[axis] = ir::Dim{static_cast<int64_t>(kept(*cond, x.dims[axis].value, c.node).size()), ""};
  c.out(0) = make_type(x.dtype, dims);
}

void run(KernelContext& c) {
  const Tensor& in = c.in(0);
  const bool flat = !c.node.has_attr("axis");
  const Tensor x = flat ? in.reshaped({in.numel()}) : in;
  const size_t axis = flat ? 0 : static_cast<size_t>(normalize_axis(c.node.attr_int("axis", 0), x.rank(), c.node));
  const auto k = kept(c.in(1), x.shape()[axis], c.node);
  Shape out = x.shape();
  out[axis] = static_cast<int64_t>(k.size());
  std::vector<std::vector<int64_t>> maps(out.size());
  for (size_t d = 0; d < out.size(); ++d) {
    if (d == axis) {
      maps[d] = k;
      continue;
    }
    for (int64_t i = 0; i < out[d]; ++i) maps[d].push_back(i);
  }
  c.outputs[0] = mapped_copy(x, out, maps);
}

}  // namespace

extern const OpDef kOpCompress;
const OpDef kOpCompress{"Compress", "", 2, 2, infer, run, data_movement_cost};

}  // namespace joule::ops
