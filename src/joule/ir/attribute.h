#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "joule/core/tensor.h"
#include "joule/ir/types.h"

namespace joule::ir {

class Graph;
// A graph-valued attribute (If's branches, Loop's and Scan's bodies): shared and never changed
// after the model is loaded.
using GraphRef = std::shared_ptr<const Graph>;

// A typed node attribute, as in ONNX (sparse tensor attributes are not supported; a type
// attribute, as Optional's `type`, is a TensorType).
using Attribute = std::variant<int64_t, float, std::string, Tensor, std::vector<int64_t>,
                               std::vector<float>, std::vector<std::string>, GraphRef, TensorType>;

std::string attribute_str(const Attribute& a);  // short text for printers

}  // namespace joule::ir
