#pragma once
// Small helpers shared by the nn op files (conv, matmul, normalisation, pooling, reductions).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "joule/ops/util.h"

namespace joule::ops::nn {

inline double numel_d(const Shape& s) { return static_cast<double>(shape_numel(s)); }

// PRelu before opset 7: the shape a per-channel slope [C] broadcasts with ([C, 1, ..., 1], C = x's
// dim 1); `slope` itself otherwise (from opset 7 the slope broadcasts numpy-style).
inline Shape prelu_slope_shape(int64_t opset, const Shape& x, const Shape& slope) {
  if (opset >= 7 || x.size() < 2 || slope.size() != 1 || slope[0] == 1 || slope[0] != x[1]) return slope;
  Shape r(x.size() - 1, 1);
  r[0] = slope[0];
  return r;
}

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

// The epilogue activation of joule's FusedConv and FusedMatMul: attribute `activation` ("",
// Relu, LeakyRelu, Clip; FusedConv also Sigmoid, SiLU, HardSwish; FusedMatMul also Gelu) with
// `activation_params` (LeakyRelu: [alpha]; Clip: [min, max]). Gelu is the exact (erf) form,
// x/2 (1 + erf(x / sqrt 2)); SiLU is x sigmoid(x); HardSwish x min(max(x/6 + 1/2, 0), 1).
struct FusedActivation {
  std::string kind;
  std::vector<float> p;
  explicit FusedActivation(const ir::Node& n)
      : kind(n.attr_string("activation", "")), p(n.attr_floats("activation_params", {})) {}
  // "" when valid, else the reason.
  // `matmul`: FusedMatMul's set, otherwise FusedConv's.
  std::string check(bool matmul) const {
    const bool known = kind.empty() || kind == "Relu" || kind == "LeakyRelu" || kind == "Clip" || (matmul && kind == "Gelu") ||
                       (!matmul && (kind == "Sigmoid" || kind == "SiLU" || kind == "HardSwish"));
    if (!known) return "activation '" + kind + "'";
    const size_t want = kind == "Clip" ? 2 : kind == "LeakyRelu" ? 1 : 0;
    if (p.size() != want)
      return "activation_params has " + std::to_string(p.size()) + " values, " + kind + " needs " + std::to_string(want);
    return "";
  }
  template <class T>
  T operator()(T v) const {
    if (kind == "Relu") return v < T(0) ? T(0) : v;  // NaN stays NaN (as PyTorch)
    if (kind == "LeakyRelu") return v >= T(0) ? v : v * static_cast<T>(p[0]);
    if (kind == "Clip") return std::min(std::max(v, static_cast<T>(p[0])), static_cast<T>(p[1]));
    if (kind == "Gelu") return T(0.5) * v * (T(1) + std::erf(v * static_cast<T>(0.7071067811865476)));
    if (kind == "Sigmoid" || kind == "SiLU") {
      const T s = v >= T(0) ? T(1) / (T(1) + std::exp(-v)) : std::exp(v) / (T(1) + std::exp(v));
      return kind == "SiLU" ? v * s : s;
    }
    if (kind == "HardSwish") return v * std::min(std::max(v / T(6) + T(0.5), T(0)), T(1));
    return v;
  }
};

// BatchNorm with batch statistics (norm_grad.cpp): outputs Y, the updated running mean and
// variance (new = (1 - batch_momentum) old + batch_momentum batch; the variance unbiased, as
// PyTorch keeps it, or biased, as ONNX's training mode does), and when the node has them the
// batch mean and 1/sqrt(var + epsilon).
void batch_norm_training(KernelContext& c, double batch_momentum, bool unbiased_running_var);

}  // namespace joule::ops::nn
