#pragma once
// Zeroed float buffers on 64-byte (cache-line) boundaries, for packed weights and scratch that
// vector loads read whole: with malloc's 16-byte alignment every other 32-byte vector would span
// two lines.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "joule/core/error.h"

namespace joule::kernels {

struct AlignedFree {
  void operator()(float* p) const { std::free(p); }
};
using AlignedFloats = std::unique_ptr<float[], AlignedFree>;

// At least `count` floats (16 at least, rounded up to a whole cache line), all zero.
inline AlignedFloats alloc_aligned_floats(int64_t count) {
  const size_t bytes = static_cast<size_t>((std::max<int64_t>(count, 16) + 15) / 16 * 16) * sizeof(float);
  auto* p = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!p) fail_internal("out of memory for " + std::to_string(bytes) + " bytes of packed floats");
  std::memset(p, 0, bytes);
  return AlignedFloats(p);
}

}  // namespace joule::kernels
