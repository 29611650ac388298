#pragma once
// Helpers shared by the elementwise op files (unary math, activations, binary arithmetic,
// comparisons, Where, variadic, Cast).
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "joule/ops/util.h"

namespace joule::ops {

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
using WrapType =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <class T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
  else
    return a + b;
}
template <class T>
T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<WrapType<T>>(a) - static_cast<WrapType<T>>(b));
  else
    return a - b;
}
template <class T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
  else
    return a * b;
}
template <class T>
T wrap_neg(T a) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(WrapType<T>(0) - static_cast<WrapType<T>>(a));
  else
    return -a;
}

// double -> T; for integer T saturates at T's range and maps NaN to 0 (C++ leaves
// out-of-range float-to-int conversion undefined).
template <class T>
T saturate_cast(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (v != v) return T(0);
    if (v >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// Row-wise iteration for broadcasting elementwise kernels: the output is walked in
// contiguous rows of the (coalesced) innermost dimension; within a row each input advances by
// inner_stride(k), which is 0 (broadcast) or 1. Dimensions of size 1 are dropped and adjacent
// dimensions that every input traverses the same way are merged, so [N,C,H,W] + [1,C,1,1]
// runs in rows of H*W with a constant second operand.
class BroadcastLoop {
 public:
  // `ins` must broadcast to `out` (see broadcast_shapes).
  BroadcastLoop(const Shape& out, const std::vector<Shape>& ins);
  int64_t inner_stride(size_t k) const { return inner_stride_[k]; }
  int64_t rows() const { return row_ ? numel_ / row_ : 0; }
  int64_t row_length() const { return row_; }
  // fn(out_offset, in_offsets (one per input), row_length) for every row, in order.
  template <class F>
  void for_each_row(F fn) const {
    for_rows(0, rows(), fn);
  }
  // The same for rows [first, last) (threads take disjoint ranges).
  template <class F>
  void for_rows(int64_t first, int64_t last, F fn) const {
    if (numel_ == 0 || first >= last) return;
    const size_t k = inner_stride_.size(), outer = sizes_.size();
    std::vector<int64_t> offs(k, 0), idx(outer, 0);
    for (size_t d = outer, r = static_cast<size_t>(first); d-- > 0;) {  // row `first`'s position
      idx[d] = static_cast<int64_t>(r % static_cast<size_t>(sizes_[d]));
      r /= static_cast<size_t>(sizes_[d]);
      for (size_t j = 0; j < k; ++j) offs[j] += idx[d] * strides_[d][j];
    }
    for (int64_t o = first * row_; o < last * row_; o += row_) {
      fn(o, offs.data(), row_);
      for (size_t d = outer; d-- > 0;) {  // odometer over the outer dimensions
        for (size_t j = 0; j < k; ++j) offs[j] += strides_[d][j];
        if (++idx[d] < sizes_[d]) break;
        for (size_t j = 0; j < k; ++j) offs[j] -= strides_[d][j] * sizes_[d];
        idx[d] = 0;
      }
    }
  }

 private:
  int64_t numel_ = 0, row_ = 1;
  std::vector<int64_t> inner_stride_;
  std::vector<int64_t> sizes_;                 // outer dimensions, outermost first
  std::vector<std::vector<int64_t>> strides_;  // [outer dim][input]
};

// Like broadcast_binary (util.h) but row-wise through BroadcastLoop: fast for any
// broadcasting pattern, not only equal shapes and scalars.
template <class A, class B, class O, class F>
Tensor broadcast_binary_rows(const Tensor& a, const Tensor& b, const Shape& out_shape, F f) {
  Tensor out(dtype_of<O>, out_shape);
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  O* po = out.data<O>();
  BroadcastLoop loop(out_shape, {a.shape(), b.shape()});
  const bool sa = loop.inner_stride(0) != 0, sb = loop.inner_stride(1) != 0;
  loop.for_each_row([&](int64_t o, const int64_t* in, int64_t n) {
    const A* x = pa + in[0];
    const B* y = pb + in[1];
    O* z = po + o;
    if (sa && sb) {
      for (int64_t i = 0; i < n; ++i) z[i] = f(x[i], y[i]);
    } else if (sa) {
      const B v = *y;
      for (int64_t i = 0; i < n; ++i) z[i] = f(x[i], v);
    } else if (sb) {
      const A v = *x;
      for (int64_t i = 0; i < n; ++i) z[i] = f(v, y[i]);
    } else {
      const O v = f(*x, *y);
      for (int64_t i = 0; i < n; ++i) z[i] = v;
    }
  });
  return out;
}

}  // namespace joule::ops
