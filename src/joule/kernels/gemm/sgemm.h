#pragma once
// Row-major SGEMM through OpenBLAS, parallelised on joule's own pool: OpenBLAS is kept at one
// thread (its own threads would oversubscribe the cores the pool already uses) and each pool
// chunk multiplies a slice of rows (or of columns when there are few rows).
#include <cstdint>

#include "joule/core/thread_pool.h"

namespace joule::kernels {

// Must be called before the first SGEMM from any thread (idempotent, cheap).
void blas_use_one_thread();

// C[M,N] = alpha * op(A) op(B) + beta * C, row-major; op(A) is [M,K] (A^T when ta).
void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
// The same, split over the pool.
void parallel_sgemm(ThreadPool& pool, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                    const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                    int64_t ldc);

}  // namespace joule::kernels
