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
// Effective 1-thread GFLOP/s of a backend's SGEMM for `guess`, on this CPU, for products of `m`
// rows and `n` columns (0: unknown). On AVX-512 CPUs oneDNN's JIT against OpenBLAS's AVX2 path
// (bench/kernels_bench); on CPUs with AVX2 but not AVX-512 both run AVX2 kernels, and oneDNN's
// are the slower ones on wide products of few rows (transformer MLPs): see sgemm.cpp's note.
double sgemm_gflops(Blas b, int64_t m, int64_t n);
// Rough time of `flops` on `threads` threads, for the `guess` policy, at sgemm_gflops(b, m, n).
// `b_bytes`: B's size; a product streams B from memory at least once (~25 GB/s at 1 thread,
// the measured read bandwidth), which bounds matrix-vector products.
double sgemm_estimate_ms(Blas b, double flops, int threads, double b_bytes = 0, int64_t m = 0, int64_t n = 0);
// The same, using every thread of the pool.
void parallel_sgemm(Blas b, ThreadPool& pool, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                    const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

}  // namespace joule::kernels
