// Winograd convolution F(TxT, 3x3), T = 2 or 4 (Lavin & Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2015), in the blocked form of NNPACK / ncnn.
//
// The output of each (image, group) is cut into TxT tiles; tile t reads an (T+2)x(T+2)
// input patch d and gives Y = A^T [ (G g G^T) (.) (B^T d B) ] A, where (.) is element-wise
// over the (T+2)^2 = 16 or 36 transform points. Summed over input channels, each transform
// point is an independent GEMM  M[a] (Mg x tiles) = U[a] (Mg x Cg) * V[a] (Cg x tiles).
//
//  * The constructor computes U = G g G^T (in double) and packs it per (group, point) in
//    panels of 32 output channels, in the order the GEMMs read it: U[g][a][m/32][c][32].
//  * run() splits the work into jobs (group, range of output channels, block of images,
//    rectangle of tiles) shared statically among the threads. Each job, in its thread's
//    scratch (allocated in the constructor):
//      1. transposes its input rows 16 channels at a time into [x][16 channels] rows (one
//         16x16 register transpose per 16 pixels, zeros for the pads; a ring of T+2 rows
//         so rows shared by two tile rows are loaded once) and applies B^T d B with 16
//         channels per AVX-512 vector -> V[tile][c/16][a][16];
//      2. runs the (T+2)^2 GEMMs with an AVX-512 register-blocked micro-kernel (32 output
//         channels x up to 12 tiles, broadcasting V) -> M[tile][m/16][a][16];
//      3. applies A^T M A with 16 output channels per vector into [x][16 channels] rows,
//         transposes back to NCHW and applies the epilogue (bias, residual, activation)
//         on the way out, with masked stores for partial tiles at the right/bottom edges.
//  A block holds about 1 MiB of V + M (L2 is 2 MiB), more when U is big: each block
//  streams all of its group's U, so bigger blocks mean fewer passes over the weights.
//  Small images are batched several to a block for the same reason.
#include "joule/kernels/conv/winograd.h"

// GCC 12 warns about _mm512_undefined_* inside its own intrinsics headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "joule/core/error.h"

namespace joule::kernels {

namespace {

constexpr int64_t kNr = 12;       // tiles per GEMM micro-kernel call
constexpr int64_t kMBlock = 32;   // output channels per packed U panel (two vectors)
// U is stored in the order the GEMMs read it; the micro-kernel prefetches it this many floats
// (4 KiB) ahead, across the 4 KiB pages where the hardware prefetcher stops. Streaming U
// from L3 is what bounds the big-channel, small-image layers.
constexpr int64_t kPrefetch = 1024;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
int64_t div_up(int64_t v, int64_t m) { return (v + m - 1) / m; }

struct AlignedFree {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], AlignedFree>;

Buffer alloc_floats(int64_t count) {
  const size_t bytes = static_cast<size_t>(round_up(std::max<int64_t>(count, 16), 16)) * sizeof(float);
  auto* p = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!p) fail_internal("winograd: out of memory");
  std::memset(p, 0, bytes);
  return Buffer(p);
}

// ---- 1-D transforms on vectors (16 independent lanes) ----------------------------------

// F(2,3): B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], A^T = [1 1 1 0; 0 1 -1 -1].
// F(4,3), points 0, 1, -1, 2, -2, inf:
//   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
//   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
template <int T>
inline void bt(const __m512* d, __m512* o) {
  if constexpr (T == 2) {
    o[0] = _mm512_sub_ps(d[0], d[2]);
    o[1] = _mm512_add_ps(d[1], d[2]);
    o[2] = _mm512_sub_ps(d[2], d[1]);
    o[3] = _mm512_sub_ps(d[1], d[3]);
  } else {
    const __m512 four = _mm512_set1_ps(4.f), five = _mm512_set1_ps(5.f), two = _mm512_set1_ps(2.f);
    const __m512 a = _mm512_fnmadd_ps(four, d[2], d[4]);  // d4 - 4 d2
    const __m512 b = _mm512_fnmadd_ps(four, d[1], d[3]);  // d3 - 4 d1
    const __m512 c = _mm512_sub_ps(d[4], d[2]);
    const __m512 e = _mm512_mul_ps(two, _mm512_sub_ps(d[3], d[1]));
    o[0] = _mm512_fmadd_ps(four, d[0], _mm512_fnmadd_ps(five, d[2], d[4]));
    o[1] = _mm512_add_ps(a, b);
    o[2] = _mm512_sub_ps(a, b);
    o[3] = _mm512_add_ps(c, e);
    o[4] = _mm512_sub_ps(c, e);
    o[5] = _mm512_fmadd_ps(four, d[1], _mm512_fnmadd_ps(five, d[3], d[5]));
  }
}

template <int T>
inline void at(const __m512* m, __m512* o) {
  if constexpr (T == 2) {
    const __m512 s = _mm512_add_ps(m[1], m[2]);
    o[0] = _mm512_add_ps(m[0], s);
    o[1] = _mm512_sub_ps(_mm512_sub_ps(m[1], m[2]), m[3]);
  } else {
    const __m512 s12 = _mm512_add_ps(m[1], m[2]), d12 = _mm512_sub_ps(m[1], m[2]);
    const __m512 s34 = _mm512_add_ps(m[3], m[4]), d34 = _mm512_sub_ps(m[3], m[4]);
    o[0] = _mm512_add_ps(_mm512_add_ps(m[0], s12), s34);
    o[1] = _mm512_fmadd_ps(_mm512_set1_ps(2.f), d34, d12);
    o[2] = _mm512_fmadd_ps(_mm512_set1_ps(4.f), s34, s12);
    o[3] = _mm512_add_ps(_mm512_fmadd_ps(_mm512_set1_ps(8.f), d34, d12), m[5]);
  }
}

// Weight transform rows G (T+2 x 3).
constexpr double kG2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr double kG4[6][3] = {{1.0 / 4, 0, 0},
                              {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                              {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                              {1.0 / 24, 1.0 / 12, 1.0 / 6},
                              {1.0 / 24, -1.0 / 12, 1.0 / 6},
                              {0, 0, 1}};

// ---- 2-D tile transforms, 16 channels per vector ---------------------------------------

// rows[i] + x: row i of a (T+2)x(T+2) patch, 16 channels per pixel.
// dst: point a = i*(T+2)+j at dst + a*astride (16 floats).
template <int T>
inline void input_tile(const float* const* rows, int64_t x, float* dst, int64_t astride) {
  constexpr int A = T + 2;
  __m512 tmp[A][A];
#pragma GCC unroll 8
  for (int i = 0; i < A; ++i) {
    __m512 d[A];
#pragma GCC unroll 8
    for (int j = 0; j < A; ++j) d[j] = _mm512_load_ps(rows[i] + x + j * 16);
    bt<T>(d, tmp[i]);
  }
#pragma GCC unroll 8
  for (int j = 0; j < A; ++j) {
    __m512 col[A], o[A];
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i) col[i] = tmp[i][j];
    bt<T>(col, o);
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i) _mm512_store_ps(dst + (i * A + j) * astride, o[i]);
  }
}

// src: point a at src + a*astride (16 channels); dst: [T][T] pixels x 16 channels.
template <int T>
inline void output_tile(const float* src, int64_t astride, float* dst, int64_t row_stride) {
  constexpr int A = T + 2;
  __m512 tmp[A][T];
#pragma GCC unroll 8
  for (int i = 0; i < A; ++i) {
    __m512 m[A];
#pragma GCC unroll 8
    for (int j = 0; j < A; ++j) m[j] = _mm512_load_ps(src + (i * A + j) * astride);
    at<T>(m, tmp[i]);
  }
#pragma GCC unroll 8
  for (int j = 0; j < T; ++j) {
    __m512 col[A], o[T];
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i) col[i] = tmp[i][j];
    at<T>(col, o);
#pragma GCC unroll 8
    for (int i = 0; i < T; ++i) _mm512_store_ps(dst + i * row_stride + j * 16, o[i]);
  }
}

// In-register transpose of a 16x16 float matrix (r[i] = row i).
inline void transpose16(__m512* r) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int q = 0; q < 4; ++q) {  // s[4q + c]: rows 4q..4q+3 at column 4L + c of each 128-bit lane L
    const __m512d a = _mm512_castps_pd(t[4 * q]), b = _mm512_castps_pd(t[4 * q + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * q + 2]), d = _mm512_castps_pd(t[4 * q + 3]);
    r[4 * q] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * q + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * q + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * q + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int c = 0; c < 4; ++c) {  // 4x4 transpose of 128-bit lanes among r[c], r[4+c], r[8+c], r[12+c]
    const __m512 u0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x44);
    const __m512 u1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xEE);
    const __m512 u2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x44);
    const __m512 u3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xEE);
    t[c] = _mm512_shuffle_f32x4(u0, u2, 0x88);
    t[4 + c] = _mm512_shuffle_f32x4(u0, u2, 0xDD);
    t[8 + c] = _mm512_shuffle_f32x4(u1, u3, 0x88);
    t[12 + c] = _mm512_shuffle_f32x4(u1, u3, 0xDD);
  }
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

// ---- GEMM micro-kernel ------------------------------------------------------------------

// V and M keep 16 channels per point together: element (tile t, channel c) of one point is
// at t*vst + (c/16)*gs + c%16 (ost for M). For t < NR, m < 16*MV:
//   out[t][m] = sum_k u[k][m] * v[t][k],   u packed as [k][16*MV].
template <int MV, int NR>
void gemm_kernel(const float* __restrict u, const float* __restrict v, int64_t vst, int64_t kc,
                 float* __restrict out, int64_t ost, int64_t gs) {
  __m512 acc[NR][MV];
#pragma GCC unroll 16
  for (int t = 0; t < NR; ++t)
#pragma GCC unroll 2
    for (int j = 0; j < MV; ++j) acc[t][j] = _mm512_setzero_ps();
  for (int64_t k0 = 0; k0 < kc; k0 += 16, v += gs) {
    const int64_t kn = std::min<int64_t>(16, kc - k0);
#pragma GCC unroll 16
    for (int t = 0; t < NR; ++t) _mm_prefetch(reinterpret_cast<const char*>(v + t * vst + gs), _MM_HINT_T0);
    for (int64_t kk = 0; kk < kn; ++kk) {
      const float* uk = u + (k0 + kk) * (16 * MV);
#pragma GCC unroll 2
      for (int j = 0; j < MV; ++j) _mm_prefetch(reinterpret_cast<const char*>(uk + 16 * j + kPrefetch), _MM_HINT_T0);
      __m512 w[MV];
#pragma GCC unroll 2
      for (int j = 0; j < MV; ++j) w[j] = _mm512_load_ps(uk + 16 * j);
#pragma GCC unroll 16
      for (int t = 0; t < NR; ++t) {
        const __m512 b = _mm512_set1_ps(v[t * vst + kk]);
#pragma GCC unroll 2
        for (int j = 0; j < MV; ++j) acc[t][j] = _mm512_fmadd_ps(w[j], b, acc[t][j]);
      }
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < NR; ++t)
#pragma GCC unroll 2
    for (int j = 0; j < MV; ++j) _mm512_store_ps(out + t * ost + j * gs, acc[t][j]);
}

using GemmFn = void (*)(const float*, const float*, int64_t, int64_t, float*, int64_t, int64_t);

template <int MV, int... NR>
constexpr std::array<GemmFn, sizeof...(NR)> gemm_table(std::integer_sequence<int, NR...>) {
  return {&gemm_kernel<MV, NR + 1>...};
}
constexpr auto kGemm1 = gemm_table<1>(std::make_integer_sequence<int, kNr>{});
constexpr auto kGemm2 = gemm_table<2>(std::make_integer_sequence<int, kNr>{});

// ---- the algorithm ----------------------------------------------------------------------

struct Scratch {
  Buffer v, m, in, out;
};

template <int T>
class WinogradConv final : public ConvKernel {
  static constexpr int64_t A = T + 2, A2 = A * A;

 public:
  WinogradConv(const ConvShape& s, const float* weight, const float* bias, const Epilogue& ep, int threads)
      : s_(s), ep_(ep), threads_(std::max(1, threads)) {
    cg_ = s.cg();
    mg_ = s.mg();
    cgp_ = round_up(cg_, 16);
    mgp_ = round_up(mg_, 16);
    mblocks_ = div_up(mgp_, kMBlock);
    tiles_h_ = div_up(s.oh, T);
    tiles_w_ = div_up(s.ow, T);

    // Tiles per block: V + M of one block in about 1 MiB (half of L2), but more when U is
    // big: every block streams U once, so blocks of b tiles cost U/b of weight traffic per
    // tile, against 2 (V + M) per tile when V and M spill out of L2. Scratch stays under
    // about 8 MiB per thread.
    const int64_t per_tile = A2 * (cgp_ + mgp_) * 4;
    const int64_t for_u = std::min(cg_ * mgp_ / (2 * (cgp_ + mgp_)), (int64_t{8} << 20) / per_tile);
    const int64_t tb = std::clamp<int64_t>(std::max((int64_t{1} << 20) / per_tile, for_u), 2 * kNr, 16 * kNr);
    bw_ = std::min(tiles_w_, tb);
    bh_ = std::min(tiles_h_, std::max<int64_t>(1, tb / bw_));
    nbw_ = div_up(tiles_w_, bw_);
    bw_ = div_up(tiles_w_, nbw_);
    nbh_ = div_up(tiles_h_, bh_);
    bh_ = div_up(tiles_h_, nbh_);
    // Small images: one block takes several whole images.
    ipb_ = nbh_ * nbw_ == 1 ? std::clamp<int64_t>(tb / (bh_ * bw_), 1, std::max<int64_t>(s.n, 1)) : 1;
    nbn_ = div_up(s.n, ipb_);
    ipb_ = div_up(s.n, nbn_);
    tb_ = ipb_ * bh_ * bw_;

    // Split output channels across jobs only when there are too few jobs to share out
    // evenly; each part redoes the (cheap) input transform.
    const int64_t base_jobs = nbn_ * s.group * nbh_ * nbw_;
    mparts_ = 1;
    while (mparts_ < mblocks_ && base_jobs * mparts_ < 4 * threads_ && (base_jobs * mparts_) % threads_ != 0)
      ++mparts_;
    jobs_ = base_jobs * mparts_;

    // U[g][a][m panel][c][panel width], zero for the padded output channels.
    u_ = alloc_floats(s.group * A2 * cg_ * mgp_);
    const double(*G)[3] = T == 2 ? kG2 : kG4;
    std::vector<double> tr(A2);
    for (int64_t g = 0; g < s.group; ++g) {
      for (int64_t m = 0; m < mg_; ++m) {
        for (int64_t c = 0; c < cg_; ++c) {
          const float* w = weight + ((g * mg_ + m) * cg_ + c) * 9;
          for (int64_t i = 0; i < A; ++i) {
            double gw[3];  // (G g)[i][:]
            for (int q = 0; q < 3; ++q) gw[q] = G[i][0] * w[q] + G[i][1] * w[3 + q] + G[i][2] * w[6 + q];
            for (int64_t j = 0; j < A; ++j) tr[i * A + j] = gw[0] * G[j][0] + gw[1] * G[j][1] + gw[2] * G[j][2];
          }
          const int64_t mb = m / kMBlock, width = std::min(kMBlock, mgp_ - mb * kMBlock);
          for (int64_t a = 0; a < A2; ++a) {
            float* panel = u_.get() + (g * A2 + a) * cg_ * mgp_ + mb * kMBlock * cg_;
            panel[c * width + m % kMBlock] = static_cast<float>(tr[a]);
          }
        }
      }
    }
    bias_ = alloc_floats(s.m);
    if (bias) std::copy(bias, bias + s.m, bias_.get());

    scratch_.resize(static_cast<size_t>(threads_));
    rwp_ = round_up(bw_ * T + 2, 16);
    owp_ = round_up(bw_ * T, 16);
    for (auto& sc : scratch_) {
      sc.v = alloc_floats(tb_ * A2 * cgp_);  // V[tile][c/16][point][16]
      sc.m = alloc_floats(tb_ * A2 * mgp_);  // M[tile][m/16][point][16]
      sc.in = alloc_floats(A * rwp_ * 16);   // ring of T+2 rows [x][16 channels]
      sc.out = alloc_floats(T * owp_ * 16);  // T output rows [x][16 channels]
    }
  }

  void run(const float* x, const float* residual, float* y, ThreadPool& pool) const override {
    struct Args {
      const WinogradConv* self;
      const float *x, *residual;
      float* y;
      int64_t nthreads;
    } args{this, x, ep_.residual ? residual : nullptr, y, std::min<int64_t>(pool.threads(), threads_)};
    // One chunk per thread; the lambda holds a single pointer so std::function does not allocate.
    pool.parallel_for(args.nthreads, [a = &args](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t j0 = a->self->jobs_ * t / a->nthreads, j1 = a->self->jobs_ * (t + 1) / a->nthreads;
        for (int64_t j = j0; j < j1; ++j) a->self->job(j, a->x, a->residual, a->y, a->self->scratch_[t]);
      }
    });
  }

 private:
  // Job j = (group, output-channel part, image block, tile row block, tile column block),
  // the last fastest, so consecutive jobs of a thread share their slice of U.
  void job(int64_t j, const float* x, const float* residual, float* y, const Scratch& sc) const {
    const int64_t bx = j % nbw_;
    j /= nbw_;
    const int64_t by = j % nbh_;
    j /= nbh_;
    const int64_t nb = j % nbn_;
    j /= nbn_;
    const int64_t mp = j % mparts_, g = j / mparts_;

    const int64_t n0 = nb * ipb_, n1 = std::min(s_.n, n0 + ipb_);
    const int64_t ty0 = by * bh_, tx0 = bx * bw_;
    const int64_t bh = std::min(bh_, tiles_h_ - ty0), bw = std::min(bw_, tiles_w_ - tx0);
    const int64_t tpi = bh * bw, nt = (n1 - n0) * tpi;  // tiles per image, in the block
    const int64_t mb0 = mblocks_ * mp / mparts_, mb1 = mblocks_ * (mp + 1) / mparts_;
    float* v = sc.v.get();
    float* mbuf = sc.m.get();
    const int64_t hw = s_.h * s_.w, ohw = s_.oh * s_.ow;

    // 1. Input transform, 16 channels at a time. Input rows go through a ring of T+2
    //    transposed rows: each tile row loads the T rows it does not share with the last.
    const int64_t y0 = ty0 * T - s_.pad_top, x0 = tx0 * T - s_.pad_left, rw = bw * T + 2;
    float* ring = sc.in.get();
    for (int64_t n = n0; n < n1; ++n) {
      float* vn = v + (n - n0) * tpi * A2 * cgp_;
      for (int64_t c0 = 0; c0 < cg_; c0 += 16) {
        const float* src = x + (n * s_.c + g * cg_ + c0) * hw;
        const int64_t nch = std::min<int64_t>(16, cg_ - c0);
        int64_t loaded = 0;
        for (int64_t ty = 0; ty < bh; ++ty) {
          for (; loaded < ty * T + A; ++loaded) load_row(src, nch, y0 + loaded, x0, rw, ring + (loaded % A) * rwp_ * 16);
          const float* rows[A];
          for (int64_t i = 0; i < A; ++i) rows[i] = ring + ((ty * T + i) % A) * rwp_ * 16;
          for (int64_t tx = 0; tx < bw; ++tx)
            input_tile<T>(rows, tx * T * 16, vn + (ty * bw + tx) * A2 * cgp_ + c0 * A2, 16);
        }
      }
    }

    // 2. One GEMM per transform point a: M[t][a][m] = sum_c V[t][a][c] U[a][c][m].
    const int64_t chunks = div_up(nt, kNr);
    for (int64_t a = 0; a < A2; ++a) {
      for (int64_t mb = mb0; mb < mb1; ++mb) {
        const int64_t width = std::min(kMBlock, mgp_ - mb * kMBlock);
        const float* u = u_.get() + (g * A2 + a) * cg_ * mgp_ + mb * kMBlock * cg_;
        const auto& table = width == kMBlock ? kGemm2 : kGemm1;
        for (int64_t i = 0; i < chunks; ++i) {  // balanced: 16 tiles -> 8 + 8, not 12 + 4
          const int64_t t0 = nt * i / chunks, nr = nt * (i + 1) / chunks - t0;
          table[static_cast<size_t>(nr - 1)](u, v + t0 * A2 * cgp_ + a * 16, A2 * cgp_, cg_,
                                             mbuf + t0 * A2 * mgp_ + (mb * kMBlock / 16 * A2 + a) * 16, A2 * mgp_,
                                             A2 * 16);
        }
      }
    }

    // 3. Output transform, 16 output channels and one tile row at a time, then epilogue and
    //    store as NCHW.
    const int64_t oy0 = ty0 * T, ox0 = tx0 * T;
    const int64_t cols = std::min(bw * T, s_.ow - ox0);
    const int64_t mv1 = std::min(mb1 * kMBlock, mgp_);
    for (int64_t n = n0; n < n1; ++n) {
      const float* mn = mbuf + (n - n0) * tpi * A2 * mgp_;
      for (int64_t m0 = mb0 * kMBlock; m0 < mv1; m0 += 16) {
        const int64_t nch = std::min<int64_t>(16, mg_ - m0);
        for (int64_t ty = 0; ty < bh; ++ty) {
          for (int64_t tx = 0; tx < bw; ++tx)
            output_tile<T>(mn + (ty * bw + tx) * A2 * mgp_ + m0 * A2, 16, sc.out.get() + tx * T * 16, owp_ * 16);
          const int64_t off = (n * s_.m + g * mg_ + m0) * ohw + (oy0 + ty * T) * s_.ow + ox0;
          store_rows(sc.out.get(), std::min<int64_t>(T, s_.oh - oy0 - ty * T), cols, nch, y + off,
                     residual ? residual + off : nullptr, bias_.get() + g * mg_ + m0);
        }
      }
    }
  }

  // dst[x][16] = src channel k (< nch) at (gy, x0 + x) for x < rw, zero outside the image.
  void load_row(const float* src, int64_t nch, int64_t gy, int64_t x0, int64_t rw, float* dst) const {
    if (gy < 0 || gy >= s_.h || nch == 0) {
      std::memset(dst, 0, sizeof(float) * static_cast<size_t>(round_up(rw, 16) * 16));
      return;
    }
    const int64_t hw = s_.h * s_.w;
    const float* srow = src + gy * s_.w;
    for (int64_t xc = 0; xc < rw; xc += 16) {
      const int64_t gx = x0 + xc;
      const int64_t lo = std::max<int64_t>(0, -gx), hi = std::min<int64_t>(16, s_.w - gx);
      __m512 reg[16];
      if (lo == 0 && hi == 16) {
        for (int64_t k = 0; k < 16; ++k) reg[k] = k < nch ? _mm512_loadu_ps(srow + k * hw + gx) : _mm512_setzero_ps();
      } else if (hi > lo) {
        const __mmask16 mask = static_cast<__mmask16>(((1u << hi) - 1) & ~((1u << lo) - 1));
        for (int64_t k = 0; k < 16; ++k)
          reg[k] = k < nch ? _mm512_maskz_expandloadu_ps(mask, srow + k * hw + gx + lo) : _mm512_setzero_ps();
      } else {
        for (int64_t k = 0; k < 16; ++k) reg[k] = _mm512_setzero_ps();
      }
      transpose16(reg);
      for (int64_t i = 0; i < 16; ++i) _mm512_store_ps(dst + (xc + i) * 16, reg[i]);
    }
  }

  // y channel k (< nch), row r, col x = epilogue(src[r][x][k]) for r < rows, x < cols.
  void store_rows(const float* src, int64_t rows, int64_t cols, int64_t nch, float* y, const float* res,
                  const float* bias) const {
    const int64_t ohw = s_.oh * s_.ow;
    const __m512 alpha = _mm512_set1_ps(ep_.alpha), beta = _mm512_set1_ps(ep_.beta), zero = _mm512_setzero_ps();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t xc = 0; xc < cols; xc += 16) {
        __m512 reg[16];
        for (int64_t i = 0; i < 16; ++i) reg[i] = _mm512_load_ps(src + (r * owp_ + xc + i) * 16);
        transpose16(reg);
        const int64_t n = std::min<int64_t>(16, cols - xc);
        const __mmask16 mask = static_cast<__mmask16>((1u << n) - 1);
        for (int64_t k = 0; k < nch; ++k) {
          const int64_t off = k * ohw + r * s_.ow + xc;
          __m512 val = _mm512_add_ps(reg[k], _mm512_set1_ps(bias[k]));
          if (res) val = _mm512_add_ps(val, _mm512_maskz_loadu_ps(mask, res + off));
          switch (ep_.act) {
            case Activation::kNone: break;
            case Activation::kRelu: val = _mm512_max_ps(zero, val); break;  // NaN (second) stays
            case Activation::kClip: val = _mm512_min_ps(beta, _mm512_max_ps(alpha, val)); break;
            case Activation::kLeakyRelu:
              val = _mm512_mask_mul_ps(val, _mm512_cmp_ps_mask(val, zero, _CMP_LT_OQ), val, alpha);
              break;
            default: break;  // refused in supports (Epilogue::simple_activation)
          }
          _mm512_mask_storeu_ps(y + off, mask, val);
        }
      }
    }
  }

  ConvShape s_;
  Epilogue ep_;
  int64_t threads_;
  int64_t cg_, mg_, cgp_, mgp_, mblocks_;
  int64_t tiles_h_, tiles_w_, bh_, bw_, nbh_, nbw_, ipb_, nbn_, tb_, mparts_, jobs_;
  int64_t rwp_, owp_;
  Buffer u_, bias_;
  std::vector<Scratch> scratch_;
};

}  // namespace

std::string winograd_supports(const ConvShape& s, int tile) {
  if (tile != 2 && tile != 4) return "winograd tile must be 2 (F(2x2,3x3)) or 4 (F(4x4,3x3))";
  if (s.kh != 3 || s.kw != 3 || s.stride_h != 1 || s.stride_w != 1 || s.dil_h != 1 || s.dil_w != 1)
    return "winograd needs a 3x3 kernel, stride 1, dilation 1";
  if (s.group < 1 || s.c % s.group != 0 || s.m % s.group != 0) return "winograd: channels not divisible by group";
  if (s.depthwise() && s.group > 1) return "winograd does not do depthwise convolution (one channel per group)";
  if (s.pad_top < 0 || s.pad_left < 0 || s.pad_bottom < 0 || s.pad_right < 0) return "winograd: negative pads";
  if (s.oh != s.h + s.pad_top + s.pad_bottom - 2 || s.ow != s.w + s.pad_left + s.pad_right - 2 || s.oh < 1 ||
      s.ow < 1)
    return "winograd: output size inconsistent with the input size and pads";
  return "";
}

std::unique_ptr<ConvKernel> make_winograd_conv(const ConvShape& s, const float* weight, const float* bias,
                                               const Epilogue& ep, int tile, int threads) {
  const std::string why = winograd_supports(s, tile);
  if (!why.empty()) fail_unsupported(why);
  if (tile == 2) return std::make_unique<WinogradConv<2>>(s, weight, bias, ep, threads);
  return std::make_unique<WinogradConv<4>>(s, weight, bias, ep, threads);
}

}  // namespace joule::kernels
