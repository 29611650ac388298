// Op class "qmatmul", algorithm avx2_int8: joule's own integer product for CPUs without VNNI.
// oneDNN's int8 matmul there is its `gemm:jit`, which takes the weights in plain layout and
// packs them again on every call (MobileNetV3's 1024 x 1000 classifier at batch 1: 1.0 ms,
// 2 GOP/s; BERT's 128 x 768 x 3072 products: 3.6 ms, 167 GOP/s, against 3.4 ms here). Here the
// weight codes are packed once, in prepare(), into panels of 8 columns with k in groups of 4
// ([N/8][K/4][8][4], zeros past K and N), with each column's code sum for the input zero point.
// A tile of rows x 16 columns accumulates in registers: 4 uint8 codes of a row broadcast,
// `vpmaddubsw` against a panel (u8 x s8 products added in pairs into 16-bit lanes), `vpmaddwd`
// by ones into 32-bit sums. A pair saturates 16 bits only beyond 32767; with weight codes within
// +-64 (7 bits) it is at most 2 * 255 * 64 = 32640, so the sums are exact — the node is refused
// otherwise (as oneDNN's kernels are there). The epilogue is the integer plan's
// (kernels/int8/requant.h: zero point, bias, per-channel scale, activation, requantization), per
// tile while it is in cache: the reference kernel's values bit for bit.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>

#include "joule/core/cpu_features.h"
#include "joule/kernels/int8/int8_node.h"
#include "joule/kernels/int8/requant.h"

namespace joule::kernels {
namespace {

constexpr int64_t kPanel = 8;       // columns per packed panel (8 int32 lanes)
constexpr int kRows = 4;            // rows of a register tile (4 x 2 panels: 8 sums)
constexpr int64_t kTileCols = 128;  // columns of a cache tile (its sums: 64 x 128 int32 = 32 KiB)
constexpr int64_t kMaxTileRows = 64;

// The weight codes B [K, N] packed as described above.
struct PackedCodes {
  Tensor b;                     // int8 [N8][K4][8][4]
  std::vector<int32_t> colsum;  // per column (zero past N)
  int64_t K = 0, N = 0, K4 = 0, N8 = 0;
};

PackedCodes pack_codes(const int8_t* w, int64_t K, int64_t N) {
  PackedCodes p;
  p.K = K, p.N = N, p.K4 = (K + 3) / 4, p.N8 = (N + kPanel - 1) / kPanel;
  p.b = Tensor(DType::Int8, {p.N8 * p.K4 * kPanel * 4});
  int8_t* b = p.b.data<int8_t>();
  std::memset(b, 0, static_cast<size_t>(p.b.numel()));
  p.colsum.assign(static_cast<size_t>(p.N8 * kPanel), 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      const int8_t v = w[k * N + n];
      b[((n / kPanel * p.K4 + k / 4) * kPanel + n % kPanel) * 4 + k % 4] = v;
      p.colsum[static_cast<size_t>(n)] += v;
    }
  return p;
}

// s0[r] / s1[r] += the products of the 4 codes at p[r] + off (row r's k-group) with that k-group
// of two panels (b0, b1). The codes are broadcast straight from memory (vpbroadcastd).
template <int R>
JOULE_AVX2 __attribute__((always_inline)) inline void quad_step(const uint8_t* const (&p)[R], int64_t off,
                                                                const int8_t* b0, const int8_t* b1, __m256i ones,
                                                                __m256i (&s0)[R], __m256i (&s1)[R]) {
  const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b0));
  const __m256i w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b1));
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const __m256i x = _mm256_broadcastd_epi32(_mm_loadu_si32(p[r] + off));  // unaligned 4 bytes
    s0[r] = _mm256_add_epi32(s0[r], _mm256_madd_epi16(_mm256_maddubs_epi16(x, w0), ones));
    s1[r] = _mm256_add_epi32(s1[r], _mm256_madd_epi16(_mm256_maddubs_epi16(x, w1), ones));
  }
}

// acc[r][0..8*np) = sum_k a[r][k] * B[k][panel cols] for r < R, over np (1 or 2) panels starting
// at `b` (the next panel K4 * 32 bytes on); acc rows ldacc apart.
template <int R>
JOULE_AVX2 __attribute__((optimize("no-tree-vectorize"))) void register_tile(const uint8_t* const* a, int64_t K,
                                                                             const int8_t* b, int64_t K4, int np,
                                                                             int32_t* acc, int64_t ldacc) {
  const __m256i ones = _mm256_set1_epi16(1);
  const int8_t* b1 = b + (np > 1 ? K4 * 32 : 0);
  __m256i s0[R], s1[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) s0[r] = s1[r] = _mm256_setzero_si256();
  const uint8_t* p[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) p[r] = a[r];
  const int64_t full = K / 4;
  for (int64_t q = 0; q < full; ++q) quad_step<R>(p, 4 * q, b + q * 32, b1 + q * 32, ones, s0, s1);
  if (full < K4) {  // the last 1-3 codes of each row, zero-padded (B is zero there too)
    alignas(16) uint8_t tail[R][4] = {};
    const uint8_t* t[R];
    for (int r = 0; r < R; ++r) {
      std::memcpy(tail[r], a[r] + 4 * full, static_cast<size_t>(K - 4 * full));
      t[r] = tail[r];
    }
    quad_step<R>(t, 0, b + full * 32, b1 + full * 32, ones, s0, s1);
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * ldacc), s0[r]);
    if (np > 1) _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * ldacc + kPanel), s1[r]);
  }
}

using TileFn = void (*)(const uint8_t* const*, int64_t, const int8_t*, int64_t, int, int32_t*, int64_t);
constexpr std::array<TileFn, kRows> kTiles = {&register_tile<1>, &register_tile<2>, &register_tile<3>, &register_tile<4>};

// y[r][c0 + j] = Requant(acc[r][j] - zx * colsum[c0 + j]) for r < rows, j < nc; y rows ldy apart:
// the int8 kernels' epilogue (kernels/int8/requant.h) on the sums as float32.
template <class Y>
void tile_epilogue(const ops::qint::Requant& rq, const float* bias, const int32_t* colsum, int32_t zx, const int32_t* acc,
                   int64_t ldacc, Y* y, int64_t ldy, int64_t rows, int64_t c0, int64_t nc) {
  alignas(64) float f[kMaxTileRows * kTileCols];
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < nc; ++j) f[i * kTileCols + j] = static_cast<float>(acc[i * ldacc + j] - zx * colsum[c0 + j]);
  requant_rows(rq, bias, f, kTileCols, y + c0, ldy, rows, c0, nc);
}

// The product of M rows of uint8 codes (A [M, K]) and the packed weights, with the epilogue,
// into Y [M, N]. Tiles of up to 64 rows x 128 columns are shared out among the
// threads; within a tile each pair of panels (16 columns, K * 16 bytes: in L1) meets every row.
class QGemm {
 public:
  QGemm(PackedCodes b, const Int8Params& q)
      : b_(std::move(b)), q_(q), bias_(bias_or_zeros(q.rq)) {}

  void run(const uint8_t* a, int64_t M, Tensor& Y, ThreadPool& pool) const {
    const int64_t N = b_.N, K = b_.K;
    const int64_t tile_rows = std::min<int64_t>(kMaxTileRows, (M + kRows - 1) / kRows * kRows);
    const int64_t row_tiles = (M + tile_rows - 1) / tile_rows, col_tiles = (N + kTileCols - 1) / kTileCols;
    pool.parallel_for(row_tiles * col_tiles, [&](int64_t t0, int64_t t1) {
      alignas(64) int32_t acc[kMaxTileRows * kTileCols];
      const uint8_t* rows[kMaxTileRows];
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t r0 = t / col_tiles * tile_rows, c0 = t % col_tiles * kTileCols;
        const int64_t nr = std::min(tile_rows, M - r0), nc = std::min(kTileCols, N - c0);
        for (int64_t i = 0; i < nr; ++i) rows[i] = a + (r0 + i) * K;
        for (int64_t j = 0; j < nc; j += 2 * kPanel) {
          const int np = nc - j > kPanel ? 2 : 1;
          const int8_t* panel = b_.b.data<int8_t>() + (c0 + j) / kPanel * b_.K4 * kPanel * 4;
          for (int64_t i = 0; i < nr; i += kRows) {
            const int rr = static_cast<int>(std::min<int64_t>(kRows, nr - i));
            kTiles[static_cast<size_t>(rr - 1)](rows + i, K, panel, b_.K4, np, acc + i * kTileCols + j, kTileCols);
          }
        }
        const int32_t zx = q_.x_zero_point;
        auto finish = [&](auto* y) {
          tile_epilogue(q_.rq, bias_.data(), b_.colsum.data(), zx, acc, kTileCols, y + r0 * N, N, nr, c0, nc);
        };
        if (Y.dtype() == DType::UInt8) finish(Y.data<uint8_t>());
        else if (Y.dtype() == DType::Int8) finish(Y.data<int8_t>());
        else finish(Y.data<float>());
      }
    });
  }

 private:
  PackedCodes b_;
  Int8Params q_;
  std::vector<float> bias_;
};

// Why the product cannot run here ("" when it can).
std::string refuse(const Int8Params& q) {
  if (!cpu_features().avx2_fma) return avx2_fma_missing_reason();
  return saturating_pairs_reason(q);
}

// Per row tile every weight is read once; the sums at ~175 GOP/s per thread (AVX2, Zen 3:
// BERT's 128 x 768 x 3072 products at 175-185).
double product_ms(int64_t M, int64_t N, int64_t K, int act, int threads) {
  const double row_passes = std::ceil(static_cast<double>(M) / kMaxTileRows);
  const double epilogue_ns = act >= 4 ? 0.6 : 0.15;  // per output: SiLU / HardSwish or not
  return (2.0 * M * N * K / 175e9 + row_passes * K * N / 15e9 + M * N * epilogue_ns * 1e-9) / threads * 1e3 + 0.002;
}

class Avx2QMatMul : public Kernel {
 public:
  explicit Avx2QMatMul(const QMatMulProblem& p)
      : p_(p), gemm_(pack_codes(p.q.w->data<int8_t>(), p.K, p.N), p.q) {}
  void run(ops::KernelContext& k) const override {
    check_int8_input(k, p_.q, p_.a_shape);
    Tensor& Y = k.output(0, p_.q.y_type, p_.y_shape);
    gemm_.run(k.in(0).data<uint8_t>(), p_.M, Y, *k.pool);
  }
  bool reads_input(size_t i) const override { return i != 3; }

 private:
  QMatMulProblem p_;
  QGemm gemm_;
};

std::string matmul_supports(const NodeView& v) {
  QMatMulProblem p;
  if (std::string r = read_qmatmul_problem(v, &p); !r.empty()) return r;
  return refuse(p.q);
}
double matmul_estimate_ms(const NodeView& v) {
  QMatMulProblem p;
  read_qmatmul_problem(v, &p);
  return product_ms(p.M, p.N, p.K, p.q.rq.act, v.threads);
}
std::unique_ptr<Kernel> matmul_prepare(const NodeView& v) {
  QMatMulProblem p;
  if (std::string r = read_qmatmul_problem(v, &p); !r.empty()) fail_internal(v.node.where() + ": " + r);
  return std::make_unique<Avx2QMatMul>(p);
}

}  // namespace

extern const Algorithm kQMatMulAvx2Int8;
const Algorithm kQMatMulAvx2Int8{"qmatmul", "avx2_int8",
                                 "uint8 x 7-bit int8 codes on AVX2 (vpmaddubsw, exact), weights packed once: CPUs "
                                 "without VNNI",
                                 matmul_supports, matmul_estimate_ms, matmul_prepare};

}  // namespace joule::kernels
