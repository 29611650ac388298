#pragma once
// The constant quantization parameters of a joule QConv / QMatMul node at plan time (inputs
// 1 x_scale, 2 x_zero_point, 3 w codes, 4 w_scale, 5 w_zero_point, 6 bias, 7 y_scale,
// 8 y_zero_point; see ops/qconv.cpp), turned into what oneDNN's int8 primitives take:
//   dst = post_ops(output_scale[c] * (acc_s32 + bias_acc[c]))
// with output_scale = x_scale * w_scale[c] (/ y_scale when requantized) and the float bias in
// accumulator units, bias_acc = bias / (x_scale * w_scale[c]). The activation runs on
// real / y_scale (Relu and LeakyRelu commute with a positive scale; Clip's bounds are divided),
// then y_zero_point is added by a linear post-op, before oneDNN's round-to-nearest-even and
// saturation.
#include <string>
#include <vector>

#include "joule/kernels/algorithm.h"

namespace joule::kernels {

struct Int8Params {
  DType x_type = DType::UInt8, y_type = DType::Float32;  // y: Float32, UInt8 or Int8
  int32_t x_zero_point = 0;
  const Tensor* w = nullptr;          // int8 codes
  std::vector<float> output_scale;    // per output channel (size channels)
  std::vector<float> bias_acc;        // empty when no bias
  std::string act;                    // "", Relu, LeakyRelu, Clip
  float alpha = 0, beta = 0;          // LeakyRelu slope; Clip bounds (already divided by y_scale)
  float y_zero_point = 0;
};

// "" and fills `p` when every parameter is a constant joule can hand to oneDNN (int8 weights
// with zero point 0, per-tensor x parameters, uint8/int8 codes), otherwise the reason.
// `channels`: output channels (QConv: w dim 0; QMatMul: w dim 1).
std::string read_int8_params(const NodeView& v, int64_t channels, Int8Params* p);

}  // namespace joule::kernels
