// Flatten: [d0..d(a-1)] x [da..dr-1] -> 2-D (axis in [-r, r], default 1).
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

std::vector<ir::Dim> flatten_dims(const ir::TensorType& x, const ir::Node& node) {
  const int64_t r = rank_of(x);
  int64_t axis = node.attr_int("axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r)
    fail(node.where() + ": axis " + std::to_string(node.attr_int("axis", 1)) +
         " out of range for rank " + std::to_string(r));
  const size_t a = static_cast<size_t>(axis);
  return {dims_product(x.dims, 0, a), dims_product(x.dims, a, x.dims.size())};
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (!x.has_shape) {
    c.out(0) = make_type(x.dtype, unknown_dims(2));
    return;
  }
  c.out(0) = make_type(x.dtype, flatten_dims(x, c.node));
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  c.outputs[0] = x.reshaped(shape_of(flatten_dims(ir::TensorType::of(x.dtype(), x.shape()), c.node)));
}

}  // namespace

extern const OpDef kOpFlatten;
const OpDef kOpFlatten{"Flatten", "", 1, 1, infer, run, data_movement_cost, nullptr, true};

}  // namespace joule::ops
