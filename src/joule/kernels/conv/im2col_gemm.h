#pragma once
// Convolution as im2col + SGEMM (the classic Caffe method): for each image and group, the
// receptive fields of a slice of output pixels are copied into a scratch matrix
// [C/g*KH*KW x pixels] and multiplied by the weights [M/g x C/g*KH*KW] with OpenBLAS
// (single-threaded; the engine's pool splits the pixels). 1x1 stride-1 unpadded convs run the
// GEMM on the input directly. Supports every shape (groups, depthwise, strides, dilations,
// asymmetric pads).
#include <memory>
#include <string>

#include "joule/kernels/conv/conv_shape.h"

namespace joule::kernels {

std::string im2col_gemm_supports(const ConvShape& s);  // always ""
std::unique_ptr<ConvKernel> make_im2col_gemm_conv(const ConvShape& s, const float* weight, const float* bias,
                                                  const Epilogue& ep, int threads);

}  // namespace joule::kernels
