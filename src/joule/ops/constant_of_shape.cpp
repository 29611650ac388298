// ConstantOfShape: a tensor of the given shape filled with `value` (one-element tensor
// attribute; default float32 0).
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

Tensor fill_value(const ir::Node& node) {
  const Tensor* v = node.attr_tensor("value");
  if (!v) return Tensor::scalar<float>(0.f);
  if (v->numel() != 1) fail(node.where() + ": attribute 'value' must have exactly one element");
  return one_element(*v);
}

std::vector<ir::Dim> out_dims(const std::vector<int64_t>& shape, const ir::Node& node) {
  for (int64_t d : shape)
    if (d < 0) fail(node.where() + ": negative dimension " + std::to_string(d) + " in shape");
  return dims_of(shape);
}

void infer(InferContext& c) {
  const DType dt = fill_value(c.node).dtype();
  if (auto shape = known_ints(c, 0)) {
    c.out(0) = make_type(dt, out_dims(*shape, c.node));
    return;
  }
  const int64_t n = static_length(c, 0);
  c.out(0) = n >= 0 ? make_type(dt, unknown_dims(static_cast<size_t>(n))) : unknown_rank(dt);
}

void run(KernelContext& c) {
  const Tensor v = fill_value(c.node);
  const Shape shape = shape_of(out_dims(c.in(0).to_int_vector(), c.node));
  c.outputs[0] = filled(v, shape);
}

}  // namespace

extern const OpDef kOpConstantOfShape;
const OpDef kOpConstantOfShape{"ConstantOfShape", "", 1, 1, infer, run, data_movement_cost};

}  // namespace joule::ops
