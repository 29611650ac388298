#include "joule/kernels/conv/conv_shape.h"

#include <fmt/core.h>

namespace joule::kernels {

std::string ConvShape::str() const {
  return fmt::format("N{} C{} H{} W{} -> M{} k{}x{} s{}x{} d{}x{} p{},{},{},{} g{}", n, c, h, w, m, kh, kw,
                     stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, pad_bottom, pad_right, group);
}

}  // namespace joule::kernels
