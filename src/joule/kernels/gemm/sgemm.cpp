#include "joule/kernels/gemm/sgemm.h"

#include <cblas.h>

#include <algorithm>
#include <dnnl.h>
#include <mutex>

#include "joule/core/cpu_features.h"
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

// Without AVX-512 (AMD Zen 3, 1 thread, measured peak 96 GFLOP/s; dnnl_sgemm, oneDNN's packed
// matmul primitive and OpenBLAS's cblas_sgemm alternated in one process, the best of 3 to 40
// calls each, five runs on 2026-11-27, over BERT/ViT/ConvNeXt projections, attention products
// and ResNet/VGG im2col shapes): OpenBLAS 40-85 GFLOP/s everywhere; oneDNN ahead of it by
// 1.04-1.55x in time on every shape except products of at most 256 rows with 1024 or more
// columns, where both oneDNN kernels drop to 32-55 (OpenBLAS 0.53-0.85x of their time:
// [128|197|256, 768, 3072], [128, 512|1024, 3072], [128, 256, 1024|4096], [128, 384, 1536]);
// from 512 rows on they are level again.
double sgemm_gflops(Blas b, int64_t m, int64_t n) {
  if (cpu_features().avx512) return b == Blas::kOnednn ? 100 : 50;
  if (b == Blas::kOpenBlas) return 65;
  return m > 0 && m <= 256 && n >= 1024 ? 45 : 75;
}

// Past a matrix-vector product (M > 2) both SGEMMs pack B on every call: B read, written and
// read again, about B's bytes at 8 GB/s on top (AMD Zen 3, 1 thread, AlexNet's fully connected
// layers at batch 8: 39-52 ms on OpenBLAS and 33-46 on oneDNN for 151 MB of B, 16 on small_m).
double sgemm_estimate_ms(Blas b, double flops, int threads, double b_bytes, int64_t m, int64_t n) {
  const double pack = m > 2 ? b_bytes / (8e9 * threads) : 0.0;
  return (std::max(flops / (sgemm_gflops(b, m, n) * 1e9 * threads), b_bytes / (25e9 * threads)) + pack) * 1e3 + 0.002;
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
