#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "joule/core/tensor.h"

namespace joule::ir {

// A typed node attribute, as in ONNX (graph-valued attributes are not supported).
using Attribute = std::variant<int64_t, float, std::string, Tensor, std::vector<int64_t>,
                               std::vector<float>, std::vector<std::string>>;

std::string attribute_str(const Attribute& a);  // short text for printers

}  // namespace joule::ir
