#pragma once
// FFT FP32 convolution (FFTW, single precision) for stride-1 convolutions with any kernel
// size, dilation, pads and groups. Portable C++ (no ISA flags needed). See fft.cpp for the
// method.
#include <memory>
#include <string>

#include "joule/kernels/conv/conv_shape.h"

namespace joule::kernels {

// "" when the shape is supported, otherwise a one-line reason (only stride 1 is).
std::string fft_supports(const ConvShape& s);

// weight: [M, C/group, KH, KW] row-major; bias: [M] or nullptr. FFTW plans, the transformed
// weights and all scratch for `threads` threads are made here; run() must be given a pool
// with at most `threads` threads. Throws Error(Unsupported) when fft_supports() refuses.
std::unique_ptr<ConvKernel> make_fft_conv(const ConvShape& s, const float* weight, const float* bias,
                                          const Epilogue& ep, int threads);

}  // namespace joule::kernels
