#pragma once
// The constant quantization parameters of a joule QConv / QMatMul node at plan time (inputs
// 1 x_scale, 2 x_zero_point, 3 w codes, 4 w_scale, 5 w_zero_point, 6 bias, 7 y_scale,
// 8 y_zero_point; see ops/qconv.cpp), and the epilogue every kernel of these ops computes
// (ops::qint::Requant: bias in accumulator units, per-channel output scales, the activation on
// the scaled value, the output zero point, round half to even, saturation) — what oneDNN's int8
// primitives take as output scales, bias and post-ops, and what the emulated kernels compute.
#include <string>
#include <vector>

#include "joule/kernels/algorithm.h"
#include "joule/kernels/conv/conv_shape.h"
#include "joule/ops/int_util.h"

namespace joule::kernels {

struct Int8Params {
  DType x_type = DType::UInt8, y_type = DType::Float32;  // y: Float32, UInt8 or Int8
  int32_t x_zero_point = 0;
  const Tensor* w = nullptr;  // int8 codes
  ops::qint::Requant rq;      // the epilogue
};

// "" and fills `p` when every parameter is a constant joule can hand to oneDNN (int8 weights
// with zero point 0, per-tensor x parameters, uint8/int8 codes), otherwise the reason.
// `channels`: output channels (QConv: w dim 0; QMatMul: w dim 1).
std::string read_int8_params(const NodeView& v, int64_t channels, Int8Params* p);

// "" where oneDNN's int8 kernels compute exactly what the integer plan defines, else why not.
// With VNNI (AVX512-VNNI, AVX-VNNI) they always do. Without it they add u8 x s8 products in
// pairs in saturating 16-bit lanes (vpmaddubsw), and with int8 inputs they halve the weights
// first; exact therefore only for uint8 inputs and weight codes within +-64 (7 bits: a pair is at
// most 2 * 255 * 64 = 32640 < 32767) — what weights quantized with `bits: 7` give.
std::string onednn_int8_inexact_reason(const Int8Params& p);
// "" when no u8 x s8 pair of the node's products can saturate a 16-bit lane (vpmaddubsw, what
// oneDNN's kernels without VNNI and avx2_int8 add in): uint8 inputs and weight codes within +-64
// (7 bits: 2 * 255 * 64 = 32640 < 32767); else why not. Scans the weights.
std::string saturating_pairs_reason(const Int8Params& p);
// The bias in accumulator units, zeros where the node has none.
std::vector<float> bias_or_zeros(const ops::qint::Requant& r);

// A QConv node: geometry and parameters, tensors as they are (N,H,W,C when channels_last).
struct QConvProblem {
  ConvShape s;
  Int8Params q;
  Shape x_shape, y_shape;
  bool channels_last = false;
};
std::string read_qconv_problem(const NodeView& v, QConvProblem* p);

// A QMatMul node: A's codes viewed as [M, K], B [K, N].
struct QMatMulProblem {
  Int8Params q;
  Shape a_shape, y_shape;
  int64_t M = 0, K = 0, N = 0;
};
std::string read_qmatmul_problem(const NodeView& v, QMatMulProblem* p);

// Fails with BadInput when the run's input is not what the kernel was planned for.
void check_int8_input(const ops::KernelContext& k, const Int8Params& q, const Shape& planned);

}  // namespace joule::kernels
