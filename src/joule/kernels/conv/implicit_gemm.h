#pragma once
// Convolution as an implicit GEMM on AVX-512 (no im2col matrix): the input is read in place
// (or from a zero-padded, stride-phase-split copy) as shifted contiguous vectors of output
// pixels, and a register-blocked microkernel accumulates [output channels x 16-pixel vectors]
// tiles over the reduction (c, kh, kw) with the epilogue fused into the store. Built with
// AVX-512 flags: only call on CPUs that have AVX-512F/VL/BW/DQ.
#include <memory>
#include <string>

#include "joule/kernels/conv/conv_shape.h"

namespace joule::kernels {

// "" for group == 1 or C/group >= 8; depthwise and thin grouped convs are refused.
std::string implicit_gemm_supports(const ConvShape& s);
std::unique_ptr<ConvKernel> make_implicit_gemm_conv(const ConvShape& s, const float* weight, const float* bias,
                                                    const Epilogue& ep, int threads);

}  // namespace joule::kernels
