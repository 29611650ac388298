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

inline bool is_half(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

// For float kernels without a native Float16/BFloat16 path: when input 0 is a half type,
// runs `run` on float32 copies of the floating inputs and converts every floating output back
// to input 0's dtype. Returns false (doing nothing) when input 0 is not a half type.
inline bool run_half_as_float(KernelContext& c, void (*run)(KernelContext&)) {
  if (!c.has(0) || !is_half(c.inputs[0]->dtype())) return false;
  const DType orig = c.inputs[0]->dtype();
  std::vector<Tensor> conv(c.inputs.size());
  KernelContext k{c.node, c.opset, {}, {}, c.pool};
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Tensor* t = c.inputs[i];
    if (t && is_half(t->dtype())) {
      conv[i] = t->cast(DType::Float32);
      k.inputs.push_back(&conv[i]);
    } else {
      k.inputs.push_back(t);
    }
  }
  k.outputs.resize(c.outputs.size());
  run(k);
  for (size_t i = 0; i < k.outputs.size(); ++i) {
    Tensor& o = k.outputs[i];
    c.outputs[i] = (o.defined() && o.dtype() == DType::Float32) ? o.cast(orig) : o;
  }
  return true;
}

// Requires every present input in [first, last) to have input `first`'s dtype.
inline void check_same_dtypes(const KernelContext& c, size_t first, size_t last) {
  for (size_t i = first + 1; i < last && i < c.inputs.size(); ++i)
    if (c.inputs[i] && c.inputs[i]->dtype() != c.inputs[first]->dtype())
      fail(c.node.where() + ": input " + std::to_string(i) + " has dtype " +
           dtype_name(c.inputs[i]->dtype()) + ", expected " + dtype_name(c.inputs[first]->dtype()));
}

}  // namespace joule::ops::nn
