#pragma once
// Helpers shared by the elementwise op files (unary math, activations, binary arithmetic,
// comparisons, Where, variadic, Cast).
#include <cstdint>
#include <limits>
#include <type_traits>

#include "joule/ops/util.h"

namespace joule::ops {

// Float16/BFloat16 support for kernels written for float32/float64: when any input is
// Float16 or BFloat16, converts those inputs to Float32, calls `run` on them and converts the
// Float32 outputs back to input 0's original dtype (when input 0 was a half type). Returns
// false (doing nothing) when no input is a half type.
bool run_through_float(KernelContext& c, void (*run)(KernelContext&));

// Output type = input 0's type (infer_same_as_input as a plain OpDef::infer function).
inline void infer_same_type(InferContext& c) { infer_same_as_input(c, 0); }

// Flops counted per output element for ops whose kernel evaluates a libm transcendental
// function (exp, log, tanh, erf, pow, sin, ...) per element: a rough cost of a polynomial
// approximation with range reduction. Plain arithmetic ops count 1 flop per element.
inline constexpr double kTranscendentalFlops = 10.0;
// The default cost with flops = kTranscendentalFlops per output element.
Cost transcendental_cost(const CostContext& c);

// Throws BadInput unless inputs [first, last) that are present all have the same dtype.
void check_same_dtype(const InferContext& c, size_t first, size_t last);
void check_same_dtype(const KernelContext& c, size_t first, size_t last);

// Legacy broadcasting of ops before opset 7 (Add, Mul, And, Equal, ... with attributes
// `broadcast` and `axis`): B's dims are aligned with A's starting at `axis`. Returns B's
// shape padded with trailing 1s so that numpy broadcasting gives the same result; B's shape
// unchanged for opset >= 7 or without `axis`.
Shape legacy_broadcast_shape(const ir::Node& n, int64_t opset, size_t rank_a, const Shape& b);
// Same for inference (types without shape are returned unchanged).
ir::TensorType legacy_broadcast_type(const ir::Node& n, int64_t opset, const ir::TensorType& a,
                                     const ir::TensorType& b);

// Integer arithmetic that wraps around (two's complement) instead of overflowing, which is
// undefined for signed types in C++ (and for small unsigned types promoted to int).
template <class T>
using WrapType = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <class T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
  else return a + b;
}
template <class T>
T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<WrapType<T>>(a) - static_cast<WrapType<T>>(b));
  else return a - b;
}
template <class T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
  else return a * b;
}
template <class T>
T wrap_neg(T a) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(WrapType<T>(0) - static_cast<WrapType<T>>(a));
  else return -a;
}

}  // namespace joule::ops

namespace joule::ops {

// double -> T; for integer T saturates at T's range and maps NaN to 0 (C++ leaves
// out-of-range float-to-int conversion undefined).
template <class T>
T saturate_cast(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (v != v) return T(0);
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace joule::ops
