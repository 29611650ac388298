// PRelu: y = x < 0 ? slope * x : x. From opset 9 the slope broadcasts unidirectionally to x
// (the output has x's shape); opset 7 allowed multidirectional broadcasting; before opset 7 a
// 1-D slope of x's channel count (dim 1) is per channel, as Caffe2 and PyTorch's old exports
// mean it. Every numeric dtype (halves through float32).
#include "joule/ops/elementwise_util.h"

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  check_same_dtype(c, 0, 2);
  if (c.opset < 7 && c.in(0).is_static() && c.in(1).is_static()) {
    const Shape s = nn::prelu_slope_shape(c.opset, c.in(0).static_shape(), c.in(1).static_shape());
    const ir::TensorType slope = ir::TensorType::of(c.in(1).dtype, s);
    c.out(0) = broadcast_types({&c.in(0), &slope}, c.in(0).dtype, c.node);
    return;
  }
  if (c.opset < 9) {
    infer_broadcast(c);
    return;
  }
  const ir::TensorType& x = c.in(0);
  const ir::TensorType& slope = c.in(1);
  ir::TensorType b = broadcast_types({&x, &slope}, x.dtype, c.node);
  // unidirectional: the broadcast result must be x's shape
  if (x.has_shape && b.has_shape && b.dims.size() != x.dims.size())
    fail(c.node.where() + ": slope " + slope.str() + " does not broadcast to x " + x.str());
  if (x.has_shape && b.has_shape)
    for (size_t i = 0; i < x.dims.size(); ++i)
      if (x.dims[i].is_static() && b.dims[i].is_static() && x.dims[i].value != b.dims[i].value)
        fail(c.node.where() + ": slope " + slope.str() + " does not broadcast to x " + x.str());
  infer_same_as_input(c);
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  check_same_dtype(c, 0, 2);
  const Tensor& x = c.in(0);
  const Tensor slope = c.in(1).reshaped(nn::prelu_slope_shape(c.opset, x.shape(), c.in(1).shape()));
  const Shape out = broadcast_shapes({x.shape(), slope.shape()}, c.node);
  if (c.opset >= 9 && out != x.shape())
    fail(c.node.where() + ": slope " + slope.describe() + " does not broadcast to x " +
         x.describe());
  visit_numeric(x.dtype(), c.node.where().c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    c.outputs[0] = broadcast_binary_rows<T, T, T>(
        x, slope, out, [](T v, T s) { return v < T(0) ? wrap_mul(s, v) : v; });
  });
}

}  // namespace

extern const OpDef kOpPRelu;
const OpDef kOpPRelu{"PRelu", "", 2, 2, infer, run};

}  // namespace joule::ops
