#pragma once
// Thin grouped convolutions on N,H,W,C tensors (RegNet's 8 and 16 channels per group): each
// group's output channels in 8-float AVX2 vectors, every input value of the group broadcast
// once per block of output pixels. oneDNN 2.6's AVX2 kernels run these layers at 6-35 GFLOP/s
// (Zen 3, 1 thread; slowest at batch 8): they vectorise over channels that a group of 8 does
// not fill. Needs AVX2 with FMA: the caller only picks it on CPUs that have it.
#include <memory>
#include <string>

#include "joule/kernels/conv/conv_shape.h"

namespace joule::kernels {

// "" when the shape is supported (a grouped, not depthwise, 2-D or 1-D conv whose output
// channels per group are a multiple of 8), otherwise a one-line reason.
std::string grouped_nhwc_supports(const ConvShape& s);

// x: [N,H,W,C], residual and y: [N,OH,OW,M]; weight [M, C/group, KH, KW], bias [M] or null.
// The epilogue's activation must be one of ReLU, Clip, LeakyReLU or none (simple_activation()).
std::unique_ptr<ConvKernel> make_grouped_nhwc_conv(const ConvShape& s, const float* weight, const float* bias,
                                                   const Epilogue& ep);

}  // namespace joule::kernels
