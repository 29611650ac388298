#pragma once
// Shared by the fast elementwise, pooling and data-movement algorithms (kernels/eltwise/).
#include <cstdint>
#include <string>

#include "joule/core/thread_pool.h"
#include "joule/kernels/algorithm.h"

namespace joule::kernels {

// Below this many elements per thread a split costs more than it saves (waking a team thread
// is a few microseconds; a simd pass over 16K floats takes about as long).
inline constexpr int64_t kEltwiseGrain = 16384;

// fn(begin, end) over [0, n): in one call when n is small or the pool has one thread, else in
// one contiguous chunk per thread (chunk sizes rounded to 16 elements, a cache line of floats).
template <class F>
void for_each_span(ThreadPool* pool, int64_t n, const F& fn) {
  const int64_t parts = pool ? std::min<int64_t>(pool->threads(), n / kEltwiseGrain) : 1;
  if (parts <= 1) {
    fn(int64_t{0}, n);
    return;
  }
  pool->parallel_for(parts, [&](int64_t pb, int64_t pe) {
    const int64_t b = std::min(n, (n * pb / parts + 15) / 16 * 16), e = pe == parts ? n : std::min(n, (n * pe / parts + 15) / 16 * 16);
    if (b < e) fn(b, e);
  });
}

// Elements of input i at plan time (its static shape), or 1 when unknown.
inline int64_t planned_numel(const NodeView& v, size_t i) {
  Shape s;
  if (!v.static_shape(i, &s)) return 1;
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// The op classes of kernels/eltwise (see registry.cpp's op_class_of).
bool is_unary_eltwise(const ir::Node& n);
bool is_binary_eltwise(const ir::Node& n);
bool is_pool(const ir::Node& n);
std::string movement_class(const ir::Node& n);  // "transpose", "concat" or ""

}  // namespace joule::kernels
