#pragma once
// Row-major SGEMM through a BLAS backend:
// - OpenBLAS, parallelised on joule's own pool: OpenBLAS is kept at one thread (its own
//   threads would oversubscribe the cores the pool uses) and each pool chunk multiplies a
//   slice of rows (or of columns when there are few rows). Note: Debian's OpenBLAS 0.3.21
//   picks its Haswell (AVX2) kernels on Sapphire Rapids.
// - oneDNN's dnnl_sgemm (JIT AVX-512), on oneDNN's OpenMP team sized to the pool's threads
//   (the pool and the team never run at the same time).
#include <cstdint>

#include "joule/core/thread_pool.h"

namespace joule::kernels {

enum class Blas { kOpenBlas, kOnednn };

// C[M,N] = alpha * op(A) op(B) + beta * C, row-major; op(A) is [M,K] (A^T when ta).
// `threads` = 1 for a call from inside a pool chunk.
void sgemm(Blas b, int threads, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
// Rough time of `flops` on `threads` threads, for the `guess` policy: OpenBLAS's AVX2 path
// vs oneDNN's AVX-512 JIT (1-thread rates measured by bench/kernels_bench).
// `b_bytes`: B's size; a product streams B from memory at least once (~25 GB/s at 1 thread,
// the measured read bandwidth), which bounds matrix-vector products.
double sgemm_estimate_ms(Blas b, double flops, int threads, double b_bytes = 0);
// The same, using every thread of the pool.
void parallel_sgemm(Blas b, ThreadPool& pool, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                    const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

}  // namespace joule::kernels
