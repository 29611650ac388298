// QConv (domain "joule"): integer convolution with a float or requantized output and a fused
// epilogue, made by the lower_int8 pass from QDQ patterns (the reference kernel is the oracle
// of the oneDNN int8 algorithm). Inputs: 0 x codes (uint8/int8), 1 x_scale, 2 x_zero_point,
// 3 w codes (int8), 4 w_scale (scalar or per output channel), 5 w_zero_point (same), 6 bias
// (float32 [M], optional), 7 y_scale, 8 y_zero_point (both optional). Attributes: Conv's, plus
// FusedConv's `activation` ("", Relu, LeakyRelu, Clip) and `activation_params`, and
// `channels_last` (1: x and y are N,H,W,C instead of N,C,H,W; set by the channels_last
// pass so consecutive integer convs need no layout reorders between them).
//   real = sum (x - x_zp)(w - w_zp[m]) * x_scale * w_scale[m] + bias[m];  real = act(real)
//   y = real (float32), or saturate(round_half_even(real / y_scale) + y_zp) in y_zp's type.
#include "joule/ops/int_util.h"
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {

bool channels_last(const ir::Node& n) { return n.attr_int("channels_last", 0) != 0; }

void infer(InferContext& c) {
  if (!channels_last(c.node)) return qint::infer_as(c, "Conv", 0, 3, qint::q_output_type(c));
  JOULE_CHECK(!c.in(0).has_shape || c.in(0).dims.size() == 4, c.node.where() + ": channels_last needs a rank-4 input");
  const ir::TensorType x = movement::permute_type(c.in(0), movement::kNhwcToNchw);
  InferContext k{c.node, c.opset, c.input_types, c.input_values, {ir::TensorType{}}, {Tensor{}}};
  k.input_types[0] = &x;
  qint::infer_as(k, "Conv", 0, 3, qint::q_output_type(c));
  c.out(0) = movement::permute_type(k.out(0), movement::kNchwToNhwc);
}

void run(KernelContext& c) {
  const Tensor& W = c.in(3);
  const int64_t M = W.dim(0);
  const bool nhwc = channels_last(c.node);
  const Tensor x0 = nhwc ? movement::transpose_tensor(c.in(0), movement::kNhwcToNchw) : c.in(0);
  const Tensor x = qint::centered(c, x0, qint::param(c, 2, 1, 0, "x_zero_point"), 1, "x");
  const Tensor w = qint::centered(c, W, qint::param(c, 5, M, 0, "w_zero_point"), 0, "w");
  const Tensor acc = qint::reference_acc(c, "Conv", x, w);
  qint::q_epilogue(c, acc, M, acc.numel() / std::max<int64_t>(1, acc.dim(0) * M));
  if (nhwc) c.outputs[0] = movement::transpose_tensor(c.outputs[0], movement::kNchwToNhwc);
}

Cost cost(const CostContext& c) { return qint::conv_cost(c, 3); }

std::string check(const ir::Node& n, int64_t opset) {
  static const OpDef* conv = find_op("", "Conv");
  if (std::string r = qint::Activation(n).check(); !r.empty()) return r;
  return conv->check(n, opset);
}

}  // namespace

extern const OpDef kOpQConv;
const OpDef kOpQConv{"QConv", "joule", 5, 9, infer, run, cost, check};

}  // namespace joule::ops
