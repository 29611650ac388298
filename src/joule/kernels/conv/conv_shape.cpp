#include "joule/kernels/conv/conv_shape.h"

#include <fmt/core.h>

#include "joule/core/error.h"

namespace joule::kernels {

std::string ConvShape::str() const {
  return fmt::format("N{} C{} H{} W{} -> M{} k{}x{} s{}x{} d{}x{} p{},{},{},{} g{}", n, c, h, w, m, kh, kw,
                     stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, pad_bottom, pad_right, group);
}

void ConvKernel::run_weights(const float*, const float*, const float*, const float*, float*, ThreadPool&) const {
  fail_internal("this convolution kernel was made with constant weights");
}

}  // namespace joule::kernels
