#pragma once
// NumPy .npy files (format versions 1-3, little-endian, C order).
#include <string>

#include "joule/core/tensor.h"

namespace joule {

Tensor load_npy(const std::string& path);
Tensor parse_npy(const std::string& bytes, const std::string& what);
void save_npy(const Tensor& t, const std::string& path);

}  // namespace joule
