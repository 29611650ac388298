#include "joule/kernels/gemm/sgemm.h"

#include <cblas.h>

#include <algorithm>
#include <dnnl.h>
#include <mutex>

#include "joule/core/error.h"
#include "joule/kernels/conv/onednn.h"

namespace joule::kernels {

namespace {
void openblas_one_thread() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}
}  // namespace

void sgemm(Blas b, int threads, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (b == Blas::kOnednn) {
    onednn_set_threads(threads);
    if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) != dnnl_success)
      fail_internal("dnnl_sgemm failed for M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K));
    return;
  }
  openblas_one_thread();
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(M), static_cast<blasint>(N), static_cast<blasint>(K), alpha, A,
              static_cast<blasint>(lda), B, static_cast<blasint>(ldb), beta, C, static_cast<blasint>(ldc));
}

double sgemm_estimate_ms(Blas b, double flops, int threads, double b_bytes) {
  return std::max(flops / ((b == Blas::kOnednn ? 100e9 : 50e9) * threads), b_bytes / (25e9 * threads)) * 1e3 + 0.002;
}

void parallel_sgemm(Blas b, ThreadPool& pool, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                    const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  const int threads = pool.threads();
  const double work = static_cast<double>(M) * N * K;
  if (b == Blas::kOnednn || threads <= 1 || work < 64.0 * 64 * 64) {
    sgemm(b, b == Blas::kOnednn ? threads : 1, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  if (M >= 4 * threads) {  // rows of C
    pool.parallel_for(M, [&](int64_t i0, int64_t i1) {
      sgemm(b, 1, ta, tb, i1 - i0, N, K, alpha, ta ? A + i0 : A + i0 * lda, lda, B, ldb, beta, C + i0 * ldc, ldc);
    });
  } else {  // columns of C, in multiples of 16
    const int64_t blocks = (N + 15) / 16;
    pool.parallel_for(blocks, [&](int64_t b0, int64_t b1) {
      const int64_t j0 = b0 * 16, j1 = std::min<int64_t>(N, b1 * 16);
      sgemm(b, 1, ta, tb, M, j1 - j0, K, alpha, A, lda, tb ? B + j0 * ldb : B + j0, ldb, beta, C + j0, ldc);
    });
  }
}

}  // namespace joule::kernels
