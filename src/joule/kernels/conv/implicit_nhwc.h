#pragma once
// Dense convolutions on N,H,W,C tensors as an implicit GEMM with AVX2 + FMA: output pixels x
// output channels, reduced over (kernel row, kernel column, input channel), which in N,H,W,C is
// the order the input lies in. oneDNN 2.6's AVX2 N,H,W,C kernels slow down on strided kxk
// layers and large inputs (ResNet-50's stride-2 3x3 layers at 39-56 GFLOP/s, Zen 3, 1 thread);
// a 6 x 16 register tile over a weight panel kept in L1 runs kxk layers at 62-75 whatever the
// stride and size (on 1x1 layers it is level with oneDNN). Needs AVX2 with FMA: the caller only
// picks it on CPUs that have it.
#include <memory>
#include <string>

#include "joule/kernels/conv/conv_shape.h"

namespace joule::kernels {

// "" when the shape is supported (a 2-D or 1-D conv with one group), otherwise a one-line reason.
std::string implicit_nhwc_supports(const ConvShape& s);

// x: [N,H,W,C], residual and y: [N,OH,OW,M]; weight [M, C, KH, KW], bias [M] or null.
// The epilogue's activation must be one of ReLU, Clip, LeakyReLU or none (simple_activation()).
// `threads`: the most threads run() will be given (one packing buffer each).
std::unique_ptr<ConvKernel> make_implicit_nhwc_conv(const ConvShape& s, const float* weight, const float* bias,
                                                    const Epilogue& ep, int threads);

}  // namespace joule::kernels
