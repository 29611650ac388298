#pragma once
// Winograd convolution F(2x2,3x3) / F(4x4,3x3) for 3x3, stride-1, dilation-1 convolutions
// (any pads, groups, batch and spatial size). Needs AVX-512F or AVX2 with FMA: the caller
// only picks it on CPUs that have one. See winograd_impl.h for the method.
#include <memory>
#include <string>

#include "joule/kernels/conv/conv_shape.h"

namespace joule::kernels {

// "" when the shape is supported, otherwise a one-line reason. tile = 2 -> F(2x2,3x3),
// tile = 4 -> F(4x4,3x3).
std::string winograd_supports(const ConvShape& s, int tile);

// weight: [M, C/group, 3, 3] row-major; bias: [M] or nullptr. The weights are transformed
// and all scratch for `threads` threads is allocated here; run() must be given a pool with
// at most `threads` threads. Throws Error(Unsupported) when winograd_supports() refuses.
// nhwc: x, the residual and y N,H,W,C (else N,C,H,W). bf16: the transformed weights and input
// in bfloat16, their products summed in float32 (AVX512-BF16; Error(Unsupported) on CPUs
// without, see winograd_bf16_unsupported_reason).
std::unique_ptr<ConvKernel> make_winograd_conv(const ConvShape& s, const float* weight, const float* bias,
                                               const Epilogue& ep, int tile, int threads, bool nhwc = false,
                                               bool bf16 = false);

// "" on CPUs with AVX512-BF16, otherwise a one-line reason naming the CPU.
std::string winograd_bf16_unsupported_reason();

}  // namespace joule::kernels
