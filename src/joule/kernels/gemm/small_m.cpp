// Op classes "matmul" and "gemm", algorithm small_m: a product of few rows (2 to 16) with a
// constant B — a classifier's fully connected layers at a small batch, where B holds 10-600 MB
// and the SGEMM kernels pack all of it again on every call (AlexNet's 9216 x 4096 layer at
// batch 8: 33-46 ms on oneDNN's and OpenBLAS's SGEMM for 151 MB of weights). Here B is packed
// once, in prepare(), into panels of 8 columns ([N/8][K][8], alpha folded in, zeros past N);
// each call reads a panel once while up to 12 rows of A accumulate in registers (one FMA per row
// and load of B; A interleaved per call, [K][rows]), so the product streams B at memory speed. Panels are shared out among the
// threads. The epilogue as the SGEMM kernels': bias and residual put into Y first, the
// activation in one pass after. AVX2 + FMA (on AVX-512 CPUs too: the rate is memory's).
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "joule/core/cpu_features.h"
#include "joule/kernels/gemm/packed_problem.h"
#include "joule/ops/vec_math.h"

namespace joule::kernels {
namespace {

constexpr int64_t kPanel = 8;     // columns per packed panel (one vector)
constexpr int kMaxRows = 12;      // rows per pass: 12 sums + B + a broadcast of 16 registers
constexpr int64_t kMinRows = 2, kMaxM = 16;
// B is prefetched this many rows of a panel (2 KiB) ahead: without it the kernel read B at
// ~7.5 GB/s, with it ~11 (AlexNet's 9216 x 4096 layer at batch 8: 21.9 -> 13.7 ms; 1, 2, 4
// and 8 KiB ahead gave 14.1-16.7).
constexpr int64_t kPrefetchRows = 64;

// y[i][0..n) (+)= sum_k a[k][i] * bp[k][0..n) for i < R: `a` is the row block interleaved
// ([K][R]; rows K floats apart would all fall in one L1 set when K is a multiple of 1024), y's
// rows ldy apart.
template <int R>
JOULE_AVX2_FMA void panel_rows(const float* a, int64_t K, const float* bp, float* y, int64_t ldy, int n,
                               bool accumulate) {
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  __m256 acc[R];
#pragma GCC unroll 12
  for (int i = 0; i < R; ++i) acc[i] = accumulate ? _mm256_maskload_ps(y + i * ldy, mask) : _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    if ((k & 1) == 0) _mm_prefetch(reinterpret_cast<const char*>(bp + (k + kPrefetchRows) * kPanel), _MM_HINT_T0);
    const __m256 b = _mm256_load_ps(bp + k * kPanel);
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + k * R + i), b, acc[i]);
  }
#pragma GCC unroll 12
  for (int i = 0; i < R; ++i) _mm256_maskstore_ps(y + i * ldy, mask, acc[i]);
}

using PanelFn = void (*)(const float*, int64_t, const float*, float*, int64_t, int, bool);
template <int... R>
constexpr std::array<PanelFn, sizeof...(R)> panel_table(std::integer_sequence<int, R...>) {
  return {&panel_rows<R + 1>...};
}
constexpr auto kPanelRows = panel_table(std::make_integer_sequence<int, kMaxRows>{});

class SmallMMatMul : public Kernel {
 public:
  explicit SmallMMatMul(const PackedProblem& p)
      : a_(p.a), y_(p.y), M_(p.M), K_(p.K), N_(p.N), panels_((p.N + kPanel - 1) / kPanel), bias_(p.bias), ep_(p.ep),
        bp_(Tensor::uninitialized(DType::Float32, {panels_, K_, kPanel})),
        ap_(Tensor::uninitialized(DType::Float32, {M_, K_})) {
    const float* w = p.w->data<float>();
    float* bp = bp_.data<float>();
    for (int64_t q = 0; q < panels_; ++q)
      for (int64_t k = 0; k < K_; ++k)
        for (int64_t j = 0; j < kPanel; ++j) {
          const int64_t n = q * kPanel + j;
          bp[(q * K_ + k) * kPanel + j] = n < N_ ? p.alpha * (p.tb ? w[n * K_ + k] : w[k * N_ + n]) : 0.f;
        }
  }

  void run(ops::KernelContext& k) const override {
    const Tensor& A = k.in(0);
    if (A.dtype() != DType::Float32 || A.shape() != a_)
      fail(k.node.where() + ": input " + A.describe() + " differs from the planned float32" + shape_str(a_));
    const float* z = nullptr;
    if (ep_.residual) {
      const Tensor& Z = k.in(3);
      if (Z.dtype() != DType::Float32 || Z.shape() != y_)
        fail(k.node.where() + ": residual " + Z.describe() + " differs from the planned output " + shape_str(y_));
      z = Z.data<float>();
    }
    Tensor& Y = k.output(0, DType::Float32, y_);
    float* y = Y.data<float>();
    const bool prefill = z || !bias_.empty();
    if (prefill) matmul_prefill(y, bias_.empty() ? nullptr : bias_.data(), z, M_, N_);
    // A's row blocks interleaved: block r (rows r .. r + rows) as [K][rows] at ap + r * K.
    const float* a = A.data<float>();
    float* ap = ap_.data<float>();
    for (int64_t r = 0; r < M_; r += kMaxRows) {
      const int64_t rows = std::min<int64_t>(kMaxRows, M_ - r);
      float* dst = ap + r * K_;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t kk = 0; kk < K_; ++kk) dst[kk * rows + i] = a[(r + i) * K_ + kk];
    }
    k.pool->parallel_for(panels_, [&](int64_t q0, int64_t q1) {
      for (int64_t q = q0; q < q1; ++q) {
        const int n = static_cast<int>(std::min(kPanel, N_ - q * kPanel));
        for (int64_t r = 0; r < M_; r += kMaxRows) {
          const int rows = static_cast<int>(std::min<int64_t>(kMaxRows, M_ - r));
          kPanelRows[static_cast<size_t>(rows - 1)](ap + r * K_, K_, bp_.data<float>() + q * K_ * kPanel,
                                                    y + r * N_ + q * kPanel, N_, n, prefill);
        }
      }
    });
    if (ep_.act != MatMulAct::kNone) matmul_activate(ep_, y, Y.numel(), *k.pool);
  }

  // B is packed into the kernel's own panels: only A and the residual are read.
  bool reads_input(size_t i) const override { return i == 0 || i == 3; }

 private:
  Shape a_, y_;
  int64_t M_, K_, N_, panels_;
  std::vector<float> bias_;
  MatMulEpilogue ep_;
  Tensor bp_;           // B in panels: [N/8][K][8]
  mutable Tensor ap_;   // A interleaved, rewritten by every run (a kernel runs one call at a time)
};

template <std::string (*Read)(const NodeView&, PackedProblem*)>
std::string supports(const NodeView& v) {
  if (std::string r = avx2_fma_missing_reason(); !r.empty()) return r;
  PackedProblem p;
  if (std::string why = Read(v, &p); !why.empty()) return why;
  if (p.M < kMinRows || p.M > kMaxM)
    return "A has " + std::to_string(p.M) + " rows (small_m takes " + std::to_string(kMinRows) + " to " +
           std::to_string(kMaxM) + "; a matrix-vector product streams plain B on onednn)";
  return "";
}

// Streams B once at ~11 GB/s at 1 thread (AMD Zen 3, 2026-11-27, AlexNet's layers at batch 8,
// BENCHMARKS.md), where the SGEMM kernels, which pack B again on every call, took 2.4-3.4x as
// long as this kernel (their estimates count B once at 25 GB/s).
template <std::string (*Read)(const NodeView&, PackedProblem*)>
double estimate_ms(const NodeView& v) {
  PackedProblem p;
  Read(v, &p);
  const double compute = 2.0 * static_cast<double>(p.M) * p.N * p.K / (85e9 * v.threads);
  const double stream = 4.0 * static_cast<double>(p.K) * p.N / (11e9 * v.threads);
  return std::max(compute, stream) * 1e3 + 0.002 +
         matmul_epilogue_ms(p.ep, static_cast<double>(p.M) * static_cast<double>(p.N), v.threads);
}

template <std::string (*Read)(const NodeView&, PackedProblem*)>
std::unique_ptr<Kernel> prepare(const NodeView& v) {
  PackedProblem p;
  if (std::string why = Read(v, &p); !why.empty()) fail_internal(v.node.where() + ": " + why);
  return std::make_unique<SmallMMatMul>(p);
}

}  // namespace

extern const Algorithm kMatMulSmallM;
const Algorithm kMatMulSmallM{"matmul", "small_m",
                              "2-16 rows times a constant B packed once in 8-column panels, streamed once per call "
                              "(AVX2 + FMA); bias/residual/activation",
                              supports<read_matmul>, estimate_ms<read_matmul>, prepare<read_matmul>};
extern const Algorithm kGemmSmallM;
const Algorithm kGemmSmallM{"gemm", "small_m",
                            "2-16 rows times a constant B packed once in 8-column panels, streamed once per call "
                            "(AVX2 + FMA; transA = 0)",
                            supports<read_gemm>, estimate_ms<read_gemm>, prepare<read_gemm>};

}  // namespace joule::kernels
