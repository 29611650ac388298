#pragma once
// joule LookupTable (ops/lookup_table.cpp): what its reference and fast kernels share.
#include <string>
#include <vector>

#include "joule/core/tensor.h"
#include "joule/ir/graph.h"

namespace joule::ops {

// A LookupTable's output type and its 256 entries, indexed by the input code's byte: output
// bytes (uint8/int8 codes, attribute `table`) or floats (float32, attribute `values`).
struct LookupTableDef {
  DType to = DType::Undefined;
  std::vector<uint8_t> bytes;
  std::vector<float> floats;
};

// "" and the node's table, or why the node is malformed (input not 8-bit, `to` not uint8, int8
// or float32, a table of another size or with a code outside the output type).
std::string lookup_table_problem(const ir::Node& n, DType in, LookupTableDef* t);

}  // namespace joule::ops
