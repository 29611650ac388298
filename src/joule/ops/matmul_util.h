#pragma once
// The reference matrix-multiply loop shared by MatMul, Gemm and Einsum: i-k-j order with a
// contiguous innermost loop over the output row, blocked over k so a block of B stays in cache.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "joule/ops/util.h"

namespace joule::ops::nn {

// Integer products wrap around (two's complement) instead of overflowing (UB for signed).
template <class T, bool = std::is_integral_v<T>>
struct MacTypeOf {
  using type = T;
};
template <class T>
struct MacTypeOf<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <class T>
using MacType = typename MacTypeOf<T>::type;

// c[i, :] += a[i, :] * b for rows i in [m0, m1); a is [*, K], b is [K, N], c is [*, N],
// all row-major and contiguous.
template <class T>
void matmul_rows(const T* a, const T* b, T* c, int64_t m0, int64_t m1, int64_t K, int64_t N) {
  using U = MacType<T>;
  constexpr int64_t kBlock = 128;
  for (int64_t k0 = 0; k0 < K; k0 += kBlock) {
    const int64_t k1 = std::min(K, k0 + kBlock);
    for (int64_t i = m0; i < m1; ++i) {
      U* cr = reinterpret_cast<U*>(c + i * N);
      const T* ar = a + i * K;
      int64_t k = k0;
      // four rows of B per pass: one load/store of the output row per 4 multiply-adds
      for (; k + 4 <= k1; k += 4) {
        const U a0 = static_cast<U>(ar[k]), a1 = static_cast<U>(ar[k + 1]);
        const U a2 = static_cast<U>(ar[k + 2]), a3 = static_cast<U>(ar[k + 3]);
        const U* b0 = reinterpret_cast<const U*>(b + k * N);
        const U* b1 = b0 + N;
        const U* b2 = b1 + N;
        const U* b3 = b2 + N;
        for (int64_t j = 0; j < N; ++j) cr[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
      }
      for (; k < k1; ++k) {
        const U av = static_cast<U>(ar[k]);
        const U* br = reinterpret_cast<const U*>(b + k * N);
        for (int64_t j = 0; j < N; ++j) cr[j] += av * br[j];
      }
    }
  }
}

// For each batch t: c[t] (M x N, contiguous at t*M*N) += a[a_off[t]] (M x K) * b[b_off[t]] (K x N).
// Offsets are in elements. Parallel over (batch, row) pairs.
template <class T>
void batched_matmul(const T* a, const T* b, T* c, const std::vector<int64_t>& a_off,
                    const std::vector<int64_t>& b_off, int64_t M, int64_t K, int64_t N,
                    ThreadPool* pool) {
  const int64_t batches = static_cast<int64_t>(a_off.size());
  const int64_t total = batches * M;
  if (total == 0 || N == 0) return;
  auto body = [&](int64_t begin, int64_t end) {
    int64_t r = begin;
    while (r < end) {
      const int64_t t = r / M, i0 = r % M;
      const int64_t i1 = std::min(M, i0 + (end - r));
      const size_t ts = static_cast<size_t>(t);
      matmul_rows<T>(a + a_off[ts], b + b_off[ts], c + t * M * N, i0, i1, K, N);
      r += i1 - i0;
    }
  };
  parallel_or_serial(pool, total, body);
}

}  // namespace joule::ops::nn
