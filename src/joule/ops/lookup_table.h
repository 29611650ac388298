#pragma once
// joule LookupTable (ops/lookup_table.cpp): what its reference and fast kernels share.
#include <string>
#include <vector>

#include "joule/core/tensor.h"
#include "joule/ir/graph.h"

namespace joule::ops {

// "" and the node's 256 output bytes (indexed by the input code's byte) and output type, or why
// the node is malformed (input not 8-bit, `to` not uint8/int8, a table of another size or with
// an entry outside the output type).
std::string lookup_table_problem(const ir::Node& n, DType in, std::vector<uint8_t>* table, DType* out);

}  // namespace joule::ops
