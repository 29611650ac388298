#pragma once
// Small helpers shared by the nn op files (conv, matmul, normalisation, pooling, reductions).
#include <cstdint>
#include <string>
#include <vector>

#include "joule/ops/util.h"

namespace joule::ops::nn {

inline double numel_d(const Shape& s) { return static_cast<double>(shape_numel(s)); }

// Cost of an op doing `flops_per_element` operations per element of input 0 (normalisations,
// softmax); bytes = all inputs and outputs.
inline Cost per_element_cost(const CostContext& c, double flops_per_element) {
  Cost r;
  if (!c.in.empty()) r.flops = flops_per_element * numel_d(c.in[0]);
  r.bytes = io_bytes(c);
  return r;
}

// Requires every present input in [first, last) to have input `first`'s dtype.
inline void check_same_dtypes(const KernelContext& c, size_t first, size_t last) {
  for (size_t i = first + 1; i < last && i < c.inputs.size(); ++i)
    if (c.inputs[i] && c.inputs[i]->dtype() != c.inputs[first]->dtype())
      fail(c.node.where() + ": input " + std::to_string(i) + " has dtype " +
           dtype_name(c.inputs[i]->dtype()) + ", expected " + dtype_name(c.inputs[first]->dtype()));
}

}  // namespace joule::ops::nn
