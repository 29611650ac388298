#pragma once
// The Winograd convolution F(TxT, 3x3), T = 2 or 4, written once over a vector ISA `V`
// (winograd_avx512.cpp: 16 floats per vector; winograd_avx2.cpp: 8). Included only by those
// two files, each compiled for its ISA; everything here has internal linkage.
//
// The output of each (image, group) is cut into TxT tiles; tile t reads an (T+2)x(T+2)
// input patch d and gives Y = A^T [ (G g G^T) (.) (B^T d B) ] A, where (.) is element-wise
// over the (T+2)^2 = 16 or 36 transform points. Summed over input channels, each transform
// point is an independent GEMM  M[a] (Mg x tiles) = U[a] (Mg x Cg) * V[a] (Cg x tiles).
// With W floats per vector:
//
//  * The constructor computes U = G g G^T (in double) and packs it per (group, point) in
//    panels of 2W output channels, in the order the GEMMs read it: U[g][a][m/2W][c][2W].
//  * run() splits the work into jobs (group, range of output channels, block of images,
//    rectangle of tiles) shared statically among the threads. Each job, in its thread's
//    scratch (allocated in the constructor):
//      1. transposes its input rows W channels at a time into [x][W channels] rows (one
//         WxW register transpose per W pixels, zeros for the pads; a ring of T+2 rows
//         so rows shared by two tile rows are loaded once) and applies B^T d B with W
//         channels per vector -> V[tile][c/W][a][W];
//      2. runs the (T+2)^2 GEMMs with a register-blocked micro-kernel (2W output channels
//         x up to V::kNr tiles, broadcasting V) -> M[tile][m/W][a][W];
//      3. applies A^T M A with W output channels per vector into [x][W channels] rows,
//         transposes back to NCHW and applies the epilogue (bias, residual, activation)
//         on the way out, with masked stores for partial tiles at the right/bottom edges.
//  On N,H,W,C tensors (channels_last) steps 1 and 3 need no transposes: a pixel's W channels
//  are one (masked) vector load or store.
//  A block holds about V::kBlockBytes of V + M (half of L2), more when U is big: each block
//  streams all of its group's U, so bigger blocks mean fewer passes over the weights.
//  Small images are batched several to a block for the same reason.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "joule/core/dtype.h"
#include "joule/core/error.h"
#include "joule/kernels/aligned_floats.h"
#include "joule/kernels/conv/conv_shape.h"

namespace joule::kernels {
namespace {

// U is stored in the order the GEMMs read it; the micro-kernel prefetches it this many floats
// (4 KiB) ahead, across the 4 KiB pages where the hardware prefetcher stops. Streaming U
// from L3 is what bounds the big-channel, small-image layers.
constexpr int64_t kPrefetch = 1024;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
int64_t div_up(int64_t v, int64_t m) { return (v + m - 1) / m; }

using Buffer = AlignedFloats;
inline Buffer alloc_floats(int64_t count) { return alloc_aligned_floats(count); }

// ---- 1-D transforms on vectors (W independent lanes) -----------------------------------

// F(2,3): B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], A^T = [1 1 1 0; 0 1 -1 -1].
// F(4,3), points 0, 1, -1, 2, -2, inf:
//   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
//   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
template <class V, int T>
inline void bt(const typename V::R* d, typename V::R* o) {
  using R = typename V::R;
  if constexpr (T == 2) {
    o[0] = V::sub(d[0], d[2]);
    o[1] = V::add(d[1], d[2]);
    o[2] = V::sub(d[2], d[1]);
    o[3] = V::sub(d[1], d[3]);
  } else {
    const R four = V::set1(4.f), five = V::set1(5.f), two = V::set1(2.f);
    const R a = V::fnmadd(four, d[2], d[4]);  // d4 - 4 d2
    const R b = V::fnmadd(four, d[1], d[3]);  // d3 - 4 d1
    const R c = V::sub(d[4], d[2]);
    const R e = V::mul(two, V::sub(d[3], d[1]));
    o[0] = V::fmadd(four, d[0], V::fnmadd(five, d[2], d[4]));
    o[1] = V::add(a, b);
    o[2] = V::sub(a, b);
    o[3] = V::add(c, e);
    o[4] = V::sub(c, e);
    o[5] = V::fmadd(four, d[1], V::fnmadd(five, d[3], d[5]));
  }
}

template <class V, int T>
inline void at(const typename V::R* m, typename V::R* o) {
  using R = typename V::R;
  if constexpr (T == 2) {
    const R s = V::add(m[1], m[2]);
    o[0] = V::add(m[0], s);
    o[1] = V::sub(V::sub(m[1], m[2]), m[3]);
  } else {
    const R s12 = V::add(m[1], m[2]), d12 = V::sub(m[1], m[2]);
    const R s34 = V::add(m[3], m[4]), d34 = V::sub(m[3], m[4]);
    o[0] = V::add(V::add(m[0], s12), s34);
    o[1] = V::fmadd(V::set1(2.f), d34, d12);
    o[2] = V::fmadd(V::set1(4.f), s34, s12);
    o[3] = V::add(V::fmadd(V::set1(8.f), d34, d12), m[5]);
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

// ---- 2-D tile transforms, W channels per vector ----------------------------------------

// rows[i] + x: row i of a (T+2)x(T+2) patch, W channels per pixel.
// dst: point a = i*(T+2)+j at dst + a*astride (W floats, or W bfloat16 when Out is uint16_t).
template <class V, int T, class Out>
inline void input_tile(const float* const* rows, int64_t x, Out* dst, int64_t astride) {
  using R = typename V::R;
  constexpr int A = T + 2;
  R tmp[A][A];
#pragma GCC unroll 8
  for (int i = 0; i < A; ++i) {
    R d[A];
#pragma GCC unroll 8
    for (int j = 0; j < A; ++j) d[j] = V::load(rows[i] + x + j * V::W);
    bt<V, T>(d, tmp[i]);
  }
#pragma GCC unroll 8
  for (int j = 0; j < A; ++j) {
    R col[A], o[A];
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i) col[i] = tmp[i][j];
    bt<V, T>(col, o);
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i) {
      if constexpr (std::is_same_v<Out, float>) V::store(dst + (i * A + j) * astride, o[i]);
      else V::store_bf16(dst + (i * A + j) * astride, o[i]);
    }
  }
}

// src: point a at src + a*astride (W channels); dst: [T][T] pixels x W channels.
template <class V, int T>
inline void output_tile(const float* src, int64_t astride, float* dst, int64_t row_stride) {
  using R = typename V::R;
  constexpr int A = T + 2;
  R tmp[A][T];
#pragma GCC unroll 8
  for (int i = 0; i < A; ++i) {
    R m[A];
#pragma GCC unroll 8
    for (int j = 0; j < A; ++j) m[j] = V::load(src + (i * A + j) * astride);
    at<V, T>(m, tmp[i]);
  }
#pragma GCC unroll 8
  for (int j = 0; j < T; ++j) {
    R col[A], o[T];
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i) col[i] = tmp[i][j];
    at<V, T>(col, o);
#pragma GCC unroll 8
    for (int i = 0; i < T; ++i) V::store(dst + i * row_stride + j * V::W, o[i]);
  }
}

// ---- GEMM micro-kernel ------------------------------------------------------------------

// The GEMMs' operand element and multiply-accumulate: float32 FMA of one channel, or (Bf16)
// VDPBF16PS of a pair of channels in bfloat16, two products per float32 lane (V::dot2).
template <class V, bool Bf16>
struct Mac {
  using E = float;
  using P = typename V::R;
  static constexpr int kStep = 1;  // channels per lane
  static P load(const E* p) { return V::load(p); }
  static P broadcast(const E* p) { return V::set1(*p); }
  static typename V::R mac(typename V::R acc, P w, P b) { return V::fmadd(w, b, acc); }
};
template <class V>
struct Mac<V, true> {
  using E = uint16_t;
  using P = typename V::Pairs;
  static constexpr int kStep = 2;
  static P load(const E* p) { return V::load_pairs(p); }
  static P broadcast(const E* p) { return V::broadcast_pair(p); }
  static typename V::R mac(typename V::R acc, P w, P b) { return V::dot2(acc, w, b); }
};

// V and M keep W channels per point together: element (tile t, channel c) of one point is
// at t*vst + (c/W)*gs + c%W (ost for M). For t < NR, m < W*MV:
//   out[t][m] = sum_k u[k][m] * v[t][k],   u packed as [k][W*MV] (Bf16: [k/2][W*MV][2], and
//   kc even: the odd channel of the last pair is zero in both).
template <class V, bool Bf16, int MV, int NR>
void gemm_kernel(const typename Mac<V, Bf16>::E* __restrict u, const typename Mac<V, Bf16>::E* __restrict v,
                 int64_t vst, int64_t kc, float* __restrict out, int64_t ost, int64_t gs) {
  using R = typename V::R;
  using M = Mac<V, Bf16>;
  constexpr int W = V::W, S = M::kStep;
  R acc[NR][MV];
#pragma GCC unroll 16
  for (int t = 0; t < NR; ++t)
#pragma GCC unroll 2
    for (int j = 0; j < MV; ++j) acc[t][j] = V::zero();
  for (int64_t k0 = 0; k0 < kc; k0 += W, v += gs) {
    const int64_t kn = std::min<int64_t>(W, kc - k0);
#pragma GCC unroll 16
    for (int t = 0; t < NR; ++t) _mm_prefetch(reinterpret_cast<const char*>(v + t * vst + gs), _MM_HINT_T0);
    for (int64_t kk = 0; kk < kn; kk += S) {
      const typename M::E* uk = u + (k0 + kk) * (W * MV);
#pragma GCC unroll 2
      for (int j = 0; j < MV; ++j)
        _mm_prefetch(reinterpret_cast<const char*>(uk + S * (W * j + kPrefetch)), _MM_HINT_T0);
      typename M::P w[MV];
#pragma GCC unroll 2
      for (int j = 0; j < MV; ++j) w[j] = M::load(uk + S * W * j);
#pragma GCC unroll 16
      for (int t = 0; t < NR; ++t) {
        const typename M::P b = M::broadcast(v + t * vst + kk);
#pragma GCC unroll 2
        for (int j = 0; j < MV; ++j) acc[t][j] = M::mac(acc[t][j], w[j], b);
      }
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < NR; ++t)
#pragma GCC unroll 2
    for (int j = 0; j < MV; ++j) V::store(out + t * ost + j * gs, acc[t][j]);
}

template <class E>
using GemmFn = void (*)(const E*, const E*, int64_t, int64_t, float*, int64_t, int64_t);

template <class V, bool Bf16, int MV, int... NR>
constexpr std::array<GemmFn<typename Mac<V, Bf16>::E>, sizeof...(NR)> gemm_table(std::integer_sequence<int, NR...>) {
  return {&gemm_kernel<V, Bf16, MV, NR + 1>...};
}

// ---- the algorithm ----------------------------------------------------------------------

struct Scratch {
  Buffer v, m, in, out;
};

// Bf16: U and V in bfloat16, the GEMMs on V::dot2 (transforms, M and the epilogue in float32).
template <class V, int T, bool Bf16 = false>
class WinogradConv final : public ConvKernel {
  using R = typename V::R;
  using E = typename Mac<V, Bf16>::E;  // element of U and V
  static constexpr int64_t A = T + 2, A2 = A * A;
  static constexpr int64_t W = V::W;
  static constexpr int64_t kNr = V::kNr;    // tiles per GEMM micro-kernel call
  static constexpr int64_t kMBlock = 2 * W;  // output channels per packed U panel (two vectors)
  static constexpr auto kGemm1 = gemm_table<V, Bf16, 1>(std::make_integer_sequence<int, V::kNr>{});
  static constexpr auto kGemm2 = gemm_table<V, Bf16, 2>(std::make_integer_sequence<int, V::kNr>{});

 public:
  WinogradConv(const ConvShape& s, const float* weight, const float* bias, const Epilogue& ep, bool nhwc, int threads)
      : s_(s), ep_(ep), nhwc_(nhwc), threads_(std::max(1, threads)) {
    cg_ = s.cg();
    mg_ = s.mg();
    cgp_ = round_up(cg_, W);
    cgk_ = Bf16 ? round_up(cg_, 2) : cg_;  // rows of U: whole channel pairs in bf16
    mgp_ = round_up(mg_, W);
    mblocks_ = div_up(mgp_, kMBlock);
    tiles_h_ = div_up(s.oh, T);
    tiles_w_ = div_up(s.ow, T);

    // Tiles per block: V + M of one block in about kBlockBytes (half of L2), but more when U
    // is big: every block streams U once, so blocks of b tiles cost U/b of weight traffic per
    // tile, against 2 (V + M) per tile when V and M spill out of L2. Scratch stays under
    // about 8 MiB per thread.
    const int64_t per_tile = A2 * (cgp_ + mgp_) * 4;
    const int64_t for_u = std::min(cg_ * mgp_ / (2 * (cgp_ + mgp_)), (int64_t{8} << 20) / per_tile);
    const int64_t tb = std::clamp<int64_t>(std::max(V::kBlockBytes / per_tile, for_u), 2 * kNr, 16 * kNr);
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

    // U[g][a][m panel][c][panel width], zero for the padded output channels; in bf16
    // U[g][a][m panel][c/2][panel width][2].
    const int64_t ucount = s.group * A2 * cgk_ * mgp_;
    u_ = alloc_floats(Bf16 ? div_up(ucount, 2) : ucount);
    E* u = reinterpret_cast<E*>(u_.get());
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
            E* panel = u + (g * A2 + a) * cgk_ * mgp_ + mb * kMBlock * cgk_;
            if constexpr (Bf16)
              panel[(c / 2 * width + m % kMBlock) * 2 + c % 2] = BFloat16(static_cast<float>(tr[a])).bits;
            else
              panel[c * width + m % kMBlock] = static_cast<float>(tr[a]);
          }
        }
      }
    }
    bias_ = alloc_floats(s.m);
    if (bias) std::copy(bias, bias + s.m, bias_.get());

    scratch_.resize(static_cast<size_t>(threads_));
    rwp_ = round_up(bw_ * T + 2, W);
    owp_ = round_up(bw_ * T, W);
    for (auto& sc : scratch_) {
      sc.v = alloc_floats(tb_ * A2 * cgp_);  // V[tile][c/W][point][W] (float or bf16)
      sc.m = alloc_floats(tb_ * A2 * mgp_);  // M[tile][m/W][point][W]
      sc.in = alloc_floats(A * rwp_ * W);    // ring of T+2 rows [x][W channels]
      sc.out = alloc_floats(T * owp_ * W);   // T output rows [x][W channels]
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
    E* v = reinterpret_cast<E*>(sc.v.get());
    float* mbuf = sc.m.get();
    const int64_t hw = s_.h * s_.w, ohw = s_.oh * s_.ow;

    // 1. Input transform, W channels at a time. Input rows go through a ring of T+2
    //    transposed rows: each tile row loads the T rows it does not share with the last.
    const int64_t y0 = ty0 * T - s_.pad_top, x0 = tx0 * T - s_.pad_left, rw = bw * T + 2;
    float* ring = sc.in.get();
    for (int64_t n = n0; n < n1; ++n) {
      E* vn = v + (n - n0) * tpi * A2 * cgp_;
      for (int64_t c0 = 0; c0 < cg_; c0 += W) {
        const float* src = nhwc_ ? x + n * hw * s_.c + g * cg_ + c0 : x + (n * s_.c + g * cg_ + c0) * hw;
        const int64_t nch = std::min<int64_t>(W, cg_ - c0);
        int64_t loaded = 0;
        for (int64_t ty = 0; ty < bh; ++ty) {
          for (; loaded < ty * T + A; ++loaded) load_row(src, nch, y0 + loaded, x0, rw, ring + (loaded % A) * rwp_ * W);
          const float* rows[A];
          for (int64_t i = 0; i < A; ++i) rows[i] = ring + ((ty * T + i) % A) * rwp_ * W;
          for (int64_t tx = 0; tx < bw; ++tx)
            input_tile<V, T>(rows, tx * T * W, vn + (ty * bw + tx) * A2 * cgp_ + c0 * A2, W);
        }
      }
    }

    // 2. One GEMM per transform point a: M[t][a][m] = sum_c V[t][a][c] U[a][c][m].
    const int64_t chunks = div_up(nt, kNr);
    for (int64_t a = 0; a < A2; ++a) {
      for (int64_t mb = mb0; mb < mb1; ++mb) {
        const int64_t width = std::min(kMBlock, mgp_ - mb * kMBlock);
        const E* u = reinterpret_cast<const E*>(u_.get()) + (g * A2 + a) * cgk_ * mgp_ + mb * kMBlock * cgk_;
        const auto& table = width == kMBlock ? kGemm2 : kGemm1;
        for (int64_t i = 0; i < chunks; ++i) {  // balanced: 16 tiles -> 8 + 8, not 12 + 4
          const int64_t t0 = nt * i / chunks, nr = nt * (i + 1) / chunks - t0;
          table[static_cast<size_t>(nr - 1)](u, v + t0 * A2 * cgp_ + a * W, A2 * cgp_, cgk_,
                                             mbuf + t0 * A2 * mgp_ + (mb * kMBlock / W * A2 + a) * W, A2 * mgp_,
                                             A2 * W);
        }
      }
    }

    // 3. Output transform, W output channels and one tile row at a time, then epilogue and
    //    store as NCHW.
    const int64_t oy0 = ty0 * T, ox0 = tx0 * T;
    const int64_t cols = std::min(bw * T, s_.ow - ox0);
    const int64_t mv1 = std::min(mb1 * kMBlock, mgp_);
    for (int64_t n = n0; n < n1; ++n) {
      const float* mn = mbuf + (n - n0) * tpi * A2 * mgp_;
      for (int64_t m0 = mb0 * kMBlock; m0 < mv1; m0 += W) {
        const int64_t nch = std::min<int64_t>(W, mg_ - m0);
        for (int64_t ty = 0; ty < bh; ++ty) {
          for (int64_t tx = 0; tx < bw; ++tx)
            output_tile<V, T>(mn + (ty * bw + tx) * A2 * mgp_ + m0 * A2, W, sc.out.get() + tx * T * W, owp_ * W);
          const int64_t pix = (oy0 + ty * T) * s_.ow + ox0;
          const int64_t off = nhwc_ ? (n * ohw + pix) * s_.m + g * mg_ + m0 : (n * s_.m + g * mg_ + m0) * ohw + pix;
          store_rows(sc.out.get(), std::min<int64_t>(T, s_.oh - oy0 - ty * T), cols, nch, y + off,
                     residual ? residual + off : nullptr, bias_.get() + g * mg_ + m0);
        }
      }
    }
  }

  // dst[x][W] = src channel k (< nch) at (gy, x0 + x) for x < rw, zero outside the image.
  // src: channel 0 of the W at pixel (0, 0) (N,H,W,C), or the plane of channel 0 (N,C,H,W).
  void load_row(const float* src, int64_t nch, int64_t gy, int64_t x0, int64_t rw, float* dst) const {
    if (gy < 0 || gy >= s_.h || nch == 0) {
      std::memset(dst, 0, sizeof(float) * static_cast<size_t>(round_up(rw, W) * W));
      return;
    }
    if (nhwc_) {  // the W channels of a pixel lie together: one (masked) load each
      const float* srow = src + gy * s_.w * s_.c;
      const int64_t end = round_up(rw, W), lo = std::clamp<int64_t>(-x0, 0, end), hi = std::clamp<int64_t>(s_.w - x0, lo, end);
      std::memset(dst, 0, sizeof(float) * static_cast<size_t>(lo * W));
      for (int64_t xi = lo; xi < hi; ++xi) V::store(dst + xi * W, V::loadu_n(srow + (x0 + xi) * s_.c, static_cast<int>(nch)));
      std::memset(dst + hi * W, 0, sizeof(float) * static_cast<size_t>((end - hi) * W));
      return;
    }
    const int64_t hw = s_.h * s_.w;
    const float* srow = src + gy * s_.w;
    for (int64_t xc = 0; xc < rw; xc += W) {
      const int64_t gx = x0 + xc;
      const int lo = static_cast<int>(std::max<int64_t>(0, -gx)), hi = static_cast<int>(std::min<int64_t>(W, s_.w - gx));
      R reg[W];
      if (lo == 0 && hi == W) {
        for (int64_t k = 0; k < W; ++k) reg[k] = k < nch ? V::loadu(srow + k * hw + gx) : V::zero();
      } else if (hi > lo) {
        for (int64_t k = 0; k < W; ++k) reg[k] = k < nch ? V::load_lanes(srow + k * hw + gx + lo, lo, hi) : V::zero();
      } else {
        for (int64_t k = 0; k < W; ++k) reg[k] = V::zero();
      }
      V::transpose(reg);
      for (int64_t i = 0; i < W; ++i) V::store(dst + (xc + i) * W, reg[i]);
    }
  }

  R activate(R val, R alpha, R beta) const {
    switch (ep_.act) {
      case Activation::kNone: return val;
      case Activation::kRelu: return V::max(V::zero(), val);  // NaN (second) stays
      case Activation::kClip: return V::min(beta, V::max(alpha, val));
      case Activation::kLeakyRelu: return V::leaky(val, alpha);
      default: return val;  // refused in supports (Epilogue::simple_activation)
    }
  }

  // y channel k (< nch), row r, col x = epilogue(src[r][x][k]) for r < rows, x < cols; y and res
  // at channel k = 0 of pixel (r = 0, x = 0).
  void store_rows(const float* src, int64_t rows, int64_t cols, int64_t nch, float* y, const float* res,
                  const float* bias) const {
    const int64_t ohw = s_.oh * s_.ow;
    const R alpha = V::set1(ep_.alpha), beta = V::set1(ep_.beta);
    if (nhwc_) {  // W output channels of a pixel together: no transpose
      const int n = static_cast<int>(nch);
      const R b = V::loadu_n(bias, n);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t xc = 0; xc < cols; ++xc) {
          const int64_t off = (r * s_.ow + xc) * s_.m;
          R val = V::add(V::load(src + (r * owp_ + xc) * W), b);
          if (res) val = V::add(val, V::loadu_n(res + off, n));
          V::storeu_n(y + off, activate(val, alpha, beta), n);
        }
      }
      return;
    }
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t xc = 0; xc < cols; xc += W) {
        R reg[W];
        for (int64_t i = 0; i < W; ++i) reg[i] = V::load(src + (r * owp_ + xc + i) * W);
        V::transpose(reg);
        const int n = static_cast<int>(std::min<int64_t>(W, cols - xc));
        for (int64_t k = 0; k < nch; ++k) {
          const int64_t off = k * ohw + r * s_.ow + xc;
          R val = V::add(reg[k], V::set1(bias[k]));
          if (res) val = V::add(val, V::loadu_n(res + off, n));
          V::storeu_n(y + off, activate(val, alpha, beta), n);
        }
      }
    }
  }

  ConvShape s_;
  Epilogue ep_;
  bool nhwc_;  // x, residual and y N,H,W,C (else N,C,H,W)
  int64_t threads_;
  int64_t cg_, mg_, cgp_, cgk_, mgp_, mblocks_;
  int64_t tiles_h_, tiles_w_, bh_, bw_, nbh_, nbw_, ipb_, nbn_, tb_, mparts_, jobs_;
  int64_t rwp_, owp_;
  Buffer u_, bias_;
  std::vector<Scratch> scratch_;
};

template <class V, bool Bf16 = false>
std::unique_ptr<ConvKernel> make_winograd_for(const ConvShape& s, const float* weight, const float* bias,
                                              const Epilogue& ep, int tile, bool nhwc, int threads) {
  if (tile == 2) return std::make_unique<WinogradConv<V, 2, Bf16>>(s, weight, bias, ep, nhwc, threads);
  return std::make_unique<WinogradConv<V, 4, Bf16>>(s, weight, bias, ep, nhwc, threads);
}

}  // namespace
}  // namespace joule::kernels
