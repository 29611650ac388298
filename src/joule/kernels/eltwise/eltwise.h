#pragma once
// Shared by the fast elementwise, pooling and data-movement algorithms (kernels/eltwise/).
#include <algorithm>
#include <cstdint>
#include <string>

#include "joule/core/thread_pool.h"
#include "joule/kernels/algorithm.h"

namespace joule::kernels {

// Below this many elements per thread a split costs more than it saves (waking a team thread
// is a few microseconds; a simd pass over 16K floats takes about as long).
inline constexpr int64_t kEltwiseGrain = 16384;

// fn(begin, end) over [0, items), where each item is `work` elements: in one call when the pool
// has one thread or there is less than kEltwiseGrain of work per thread, else in one contiguous
// range of items per thread.
template <class F>
void split_items(ThreadPool* pool, int64_t items, int64_t work, const F& fn) {
  const int64_t parts = pool ? std::min<int64_t>({pool->threads(), items, items * work / kEltwiseGrain}) : 1;
  if (parts <= 1) {
    fn(int64_t{0}, items);
    return;
  }
  pool->parallel_for(parts, [&](int64_t b, int64_t e) { fn(items * b / parts, items * e / parts); });
}

// Elements of input i at plan time (its static shape), or 1 when unknown.
inline int64_t planned_numel(const NodeView& v, size_t i) {
  Shape s;
  if (!v.static_shape(i, &s)) return 1;
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Clip's bounds: its min/max attributes (before opset 11), else its constant scalar inputs 1 and 2
// (absent: -inf / +inf). False when a bound is given but not a float32 constant scalar.
bool clip_bounds(const NodeView& v, float* lo, float* hi);

// The op classes of kernels/eltwise (see registry.cpp's op_class_of).
bool is_unary_eltwise(const ir::Node& n);
bool is_binary_eltwise(const ir::Node& n);
bool is_pool(const ir::Node& n);
bool is_quantize(const ir::Node& n);  // QuantizeLinear (ONNX's, joule's), DequantizeLinear
std::string movement_class(const ir::Node& n);  // "transpose", "concat", "slice", "gather", "view" or ""
std::string norm_class(const ir::Node& n);      // "softmax", "layer_norm", "batch_norm" or ""

}  // namespace joule::kernels
