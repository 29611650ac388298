#include <immintrin.h>

#include "joule/profile/peak_loop.h"

namespace joule::profile {

float fma_chains_avx512(int64_t iters) {
  // acc = acc * m + a converges to a / (1 - m) = 1: no overflow, no denormals.
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-6f);
  __m512 acc[kPeakChains];
  for (int c = 0; c < kPeakChains; ++c) acc[c] = _mm512_set1_ps(1.0f + 0.01f * c);
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 16  // the accumulators in registers, at -O2 too
    for (int c = 0; c < kPeakChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], m, a);
  for (int c = 1; c < kPeakChains; ++c) acc[0] = _mm512_add_ps(acc[0], acc[c]);
  alignas(64) float lanes[16];  // (not _mm512_reduce_add_ps: GCC 12 warns inside it)
  _mm512_store_ps(lanes, acc[0]);
  float sum = 0;
  for (float v : lanes) sum += v;
  return sum;
}

}  // namespace joule::profile
