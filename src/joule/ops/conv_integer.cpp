// ConvInteger and QLinearConv (ONNX opset 10): convolution of uint8/int8 codes with Conv's
// attributes. ConvInteger: y = conv(x - x_zero_point, w - w_zero_point) in int32.
// QLinearConv: acc = conv(x - x_zp, w - w_zp) + B (int32, scale x_scale*w_scale), then
// y = saturate(round_half_even(acc * x_scale * w_scale / y_scale) + y_zero_point) in
// y_zero_point's type. w_scale / w_zero_point may have one value per output channel. The
// accumulation is exact (ops/int_util.h).
#include "joule/ops/int_util.h"

namespace joule::ops {
namespace {

void infer_conv_integer(InferContext& c) { qint::infer_as(c, "Conv", 0, 1, DType::Int32); }

void run_conv_integer(KernelContext& c) {
  const Tensor& W = c.in(1);
  const Tensor x = qint::centered(c, c.in(0), qint::param(c, 2, 1, 0, "x_zero_point"), 1, "x");
  const Tensor w = qint::centered(c, W, qint::param(c, 3, W.dim(0), 0, "w_zero_point"), 0, "w");
  c.outputs[0] = qint::reference_acc(c, "Conv", x, w).cast(DType::Int32);
}

Cost cost_conv_integer(const CostContext& c) { return qint::conv_cost(c, 1); }

void infer_qlinear_conv(InferContext& c) {
  qint::infer_as(c, "Conv", 0, 3, c.has(7) ? c.in(7).dtype : DType::UInt8);
}

void run_qlinear_conv(KernelContext& c) {
  const Tensor& W = c.in(3);
  const int64_t M = W.dim(0);
  const Tensor x = qint::centered(c, c.in(0), qint::param(c, 2, 1, 0, "x_zero_point"), 1, "x");
  const Tensor w = qint::centered(c, W, qint::param(c, 5, M, 0, "w_zero_point"), 0, "w");
  Tensor acc = qint::reference_acc(c, "Conv", x, w);
  const int64_t plane = acc.numel() / std::max<int64_t>(1, acc.dim(0) * M);
  if (c.has(8)) {
    const Tensor& B = c.in(8);
    JOULE_CHECK(B.numel() == M, c.node.where() + ": bias " + B.describe() + " does not match " + std::to_string(M) +
                                    " output channels");
    double* a = acc.data<double>();
    for (int64_t i = 0; i < acc.numel(); ++i) a[i] += static_cast<double>(B.value_as_int((i / plane) % M));
  }
  const float xs = static_cast<float>(qint::param(c, 1, 1, 1, "x_scale")[0]);
  const std::vector<double> ws = qint::param(c, 4, M, 1, "w_scale");
  const float ys = static_cast<float>(qint::param(c, 6, 1, 1, "y_scale")[0]);
  const float yzp = static_cast<float>(qint::param(c, 7, 1, 0, "y_zero_point")[0]);
  std::vector<float> mult(ws.size());
  for (size_t k = 0; k < ws.size(); ++k) mult[k] = xs * static_cast<float>(ws[k]) / ys;
  const DType t = c.has(7) ? c.in(7).dtype() : DType::UInt8;
  const double* pa = acc.data<double>();
  c.outputs[0] = qint::to_codes(t, acc.shape(), yzp, [&](int64_t i) {
    return static_cast<float>(pa[i]) * mult[mult.size() > 1 ? static_cast<size_t>((i / plane) % M) : 0];
  });
}

Cost cost_qlinear_conv(const CostContext& c) { return qint::conv_cost(c, 3); }

std::string check(const ir::Node& n, int64_t opset) {
  static const OpDef* conv = find_op("", "Conv");
  return conv->check(n, opset);
}

}  // namespace

extern const OpDef kOpConvInteger;
const OpDef kOpConvInteger{"ConvInteger", "", 2, 4, infer_conv_integer, run_conv_integer, cost_conv_integer, check};
extern const OpDef kOpQLinearConv;
const OpDef kOpQLinearConv{"QLinearConv", "", 8, 9, infer_qlinear_conv, run_qlinear_conv, cost_qlinear_conv, check};

}  // namespace joule::ops
