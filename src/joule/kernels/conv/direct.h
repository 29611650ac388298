#pragma once
// Direct FP32 convolution for every ConvShape (groups, depthwise, strides, dilations, pads),
// with a fast path for depthwise 3x3 / 5x5 at stride 1 or 2. Needs AVX-512F: the caller only
// picks it on CPUs that have it. See direct.cpp for the method.
#include <memory>
#include <string>

#include "joule/kernels/conv/conv_shape.h"

namespace joule::kernels {

// "" when the shape is supported: every valid ConvShape is.
std::string direct_supports(const ConvShape& s);

// weight: [M, C/group, KH, KW] row-major; bias: [M] or nullptr. The weights are repacked and
// all scratch for `threads` threads is allocated here; run() must be given a pool with at
// most `threads` threads.
std::unique_ptr<ConvKernel> make_direct_conv(const ConvShape& s, const float* weight, const float* bias,
                                             const Epilogue& ep, int threads);

}  // namespace joule::kernels
