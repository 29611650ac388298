// Implicit-GEMM convolution with an AVX-512 microkernel.
//
// Method: every conv is a sum over taps k = (c, kh, kw) of shifted 1-D products on a flat
// pixel axis. Output pixel (oy, ox) gets the flat index q = oy*WQ + ox, and its input for tap
// k sits at xq[q + off[k]] in planes of row pitch WQ:
//  - stride 1 and no padding: xq is x itself, WQ = W (columns ox in [OW, W) are junk);
//  - otherwise each image is first copied to a zero-padded buffer split into stride phases
//    (phase (a, b) holds padded rows a, a+sh, ... and columns b, b+sw, ...), so that a tap's
//    pixels are again contiguous: off = c*plane + phase(kh*dh % sh, kw*dw % sw) +
//    (kh*dh/sh)*WQ + kw*dw/sw, with WQ = OW + (KW-1)*dw/sw.
// Per group this is the GEMM Y[M/g x Q] = W[M/g x K] * X[K x Q] over Q = (OH-1)*WQ + OW
// flat pixels, X never materialised. Weights are packed into panels [K][MR] of MR output
// channels (zero padded). A tile is MR output channels x NV vectors of 16 consecutive flat
// pixels (MR*NV = 24 zmm accumulators): per tap the microkernel loads NV input vectors,
// broadcasts MR weights and does MR*NV FMAs. The tile is stored to NCHW with the epilogue
// (bias, residual, activation) fused; vectors that contain junk columns are compressed to
// their valid lanes, which are contiguous in y.
// Blocking: work items (group, pixel strip, channel panel) are split over the threads,
// panels innermost; the reduction is cut into blocks of input channels so that a strip's
// input block stays in L1 and the weights of all panels for a block in L2. While a tile is
// computed, the microkernel prefetches the output lines it will store to and the input lines
// that the next strip adds.
#include "joule/kernels/conv/implicit_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

namespace joule::kernels {

namespace {

constexpr int kLanes = 16;

// One reduction step: acc[i][v] += w[i] * p[16v + lane] (the last vector masked when kTail).
template <int MR, int NV, bool kTail>
[[gnu::always_inline]] inline void fma_step(__m512 (&acc)[MR][NV], const float* p, const float* w, __mmask16 mask) {
  __m512 xv[NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) {
    xv[v] = kTail && v == NV - 1 ? _mm512_maskz_loadu_ps(mask, p + v * kLanes) : _mm512_loadu_ps(p + v * kLanes);
  }
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i) {
    const __m512 b = _mm512_set1_ps(w[i]);
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(b, xv[v], acc[i][v]);
  }
}

// The microkernel: acc[MR x NV] += sum over k in [0, kc) of w[k][i] * xq[off[k] + 16v + lane],
// with acc loaded from `io` (row i at io + i*NV*16) when `accumulate`, else from zero, and
// stored back to io. The last vector is loaded under `mask` when kTail (it may reach past the
// end of the input). The first npf steps also prefetch one cache line each, pf[0..npf).
template <int MR, int NV, bool kTail>
void microkernel(const float* xq, const int64_t* off, const float* w, int64_t kc, __mmask16 mask, float* io,
                 bool accumulate, const float* const* pf, int64_t npf) {
  __m512 acc[MR][NV];
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      acc[i][v] = accumulate ? _mm512_load_ps(io + (i * NV + v) * kLanes) : _mm512_setzero_ps();
    }
  int64_t k = 0;
  for (const int64_t kp = std::min(kc, npf); k < kp; ++k, w += MR) {
    fma_step<MR, NV, kTail>(acc, xq + off[k], w, mask);
    _mm_prefetch(reinterpret_cast<const char*>(pf[k]), _MM_HINT_T0);
  }
#pragma GCC unroll 2
  for (; k < kc; ++k, w += MR) fma_step<MR, NV, kTail>(acc, xq + off[k], w, mask);
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) _mm512_store_ps(io + (i * NV + v) * kLanes, acc[i][v]);
}

using MicroFn = void (*)(const float*, const int64_t*, const float*, int64_t, __mmask16, float*, bool,
                         const float* const*, int64_t);

// One register blocking: full strips of NV vectors, and tails of 1..NV vectors (masked).
struct Blocking {
  int mr, nv;
  MicroFn full;
  std::array<MicroFn, 9> tail;  // tail[n]: n vectors, the last one masked
};

template <int MR, int NV, size_t... I>
constexpr Blocking make_blocking(std::index_sequence<I...>) {
  return {MR, NV, microkernel<MR, NV, false>, {nullptr, microkernel<MR, static_cast<int>(I) + 1, true>...}};
}
template <int MR, int NV>
constexpr Blocking make_blocking() {
  return make_blocking<MR, NV>(std::make_index_sequence<NV>{});
}

constexpr Blocking kBlockings[] = {make_blocking<8, 3>(), make_blocking<6, 4>(), make_blocking<4, 6>(),
                                   make_blocking<12, 2>(), make_blocking<24, 1>()};
constexpr int64_t kMaxPrefetch = 256;  // cache lines prefetched per tile

// FMA slots spent by MR x NV tiles on `mg` channels x `nvec` pixel vectors (the useful ones
// plus those wasted on zero-padded channels and on a partial last strip).
double blocking_cost(const Blocking& b, int64_t mg, int64_t nvec) {
  const int64_t panels = (mg + b.mr - 1) / b.mr;
  const int64_t strips = (nvec + b.nv - 1) / b.nv;
  return static_cast<double>(panels * b.mr) * static_cast<double>(strips * b.nv);
}

// (The maskz forms with an all-ones mask avoid GCC 12's false -Wmaybe-uninitialized on the
// plain _mm512_max_ps / _mm512_min_ps.)
template <Activation A>
__m512 activate(__m512 v, __m512 alpha, __m512 beta) {
  constexpr __mmask16 kAll = 0xFFFF;
  // vmaxps/vminps return the second operand when either is NaN: v goes second, so NaN stays.
  if constexpr (A == Activation::kRelu) return _mm512_maskz_max_ps(kAll, _mm512_setzero_ps(), v);
  if constexpr (A == Activation::kClip) return _mm512_maskz_min_ps(kAll, beta, _mm512_maskz_max_ps(kAll, alpha, v));
  if constexpr (A == Activation::kLeakyRelu) {
    return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v, alpha);
  }
  return v;
}

class ImplicitGemmConv final : public ConvKernel {
 public:
  ImplicitGemmConv(const ConvShape& s, const float* weight, const float* bias, const Epilogue& ep, int threads)
      : s_(s), ep_(ep), threads_(std::max(1, threads)) {
    k_ = s.cg() * s.kh * s.kw;
    plan_input();
    plan_output();
    plan_blocking();
    // Packed weights [group][panel][k][mr], zero padded past M/g.
    const int64_t mg = s.mg(), mr = blocking_->mr;
    w_.assign(static_cast<size_t>(s.group * panels_ * k_ * mr), 0.f);
    for (int64_t g = 0; g < s.group; ++g) {
      for (int64_t j = 0; j < mg; ++j) {
        float* dst = w_.data() + ((g * panels_ + j / mr) * k_) * mr + j % mr;
        const float* src = weight + (g * mg + j) * k_;
        for (int64_t k = 0; k < k_; ++k) dst[k * mr] = src[k];
      }
    }
    bias_.assign(static_cast<size_t>(s.m), 0.f);
    if (bias) bias_.assign(bias, bias + s.m);
    acc_size_ = panels_ * mr * blocking_->nv * kLanes;
    acc_ = static_cast<float*>(std::aligned_alloc(64, static_cast<size_t>(threads_ * acc_size_) * sizeof(float)));
  }
  ~ImplicitGemmConv() override { std::free(acc_); }
  ImplicitGemmConv(const ImplicitGemmConv&) = delete;
  ImplicitGemmConv& operator=(const ImplicitGemmConv&) = delete;

  void run(const float* x, const float* residual, float* y, ThreadPool& pool) const override {
    // One chunk per thread; the lambdas capture at most two pointers so that std::function
    // stores them without allocating.
    const int64_t out_image = s_.m * s_.oh * s_.ow;
    for (int64_t n = 0; n < s_.n; ++n) {
      const float* xn = x + n * s_.c * s_.h * s_.w;
      if (!direct_) {
        pool.parallel_for(s_.c, [this, xn](int64_t c0, int64_t c1) { pad_split(xn, c0, c1); });
      }
      const Args a{direct_ ? xn : buf_.data(), ep_.residual ? residual + n * out_image : nullptr, y + n * out_image,
                   std::min<int64_t>(threads_, pool.threads())};
      pool.parallel_for(a.threads, [this, &a](int64_t tb, int64_t te) {
        for (int64_t t = tb; t < te; ++t) run_thread(a, t);
      });
    }
  }

 private:
  struct Args {
    const float* xq;        // this image's input plane (x itself or buf_)
    const float* residual;  // this image's residual, or null
    float* y;               // this image's output
    int64_t threads;
  };

  // The input planes xq (x itself or the padded, phase-split buf_) and the offset of each tap.
  void plan_input() {
    const ConvShape& s = s_;
    direct_ = s.stride_h == 1 && s.stride_w == 1 && s.pad_top == 0 && s.pad_left == 0 && s.pad_bottom == 0 &&
              s.pad_right == 0;
    // Stride phases that some tap reads (phase_row_[a] / phase_col_[b]: slot index or -1).
    phase_row_.assign(static_cast<size_t>(s.stride_h), -1);
    phase_col_.assign(static_cast<size_t>(s.stride_w), -1);
    int64_t rows_used = 0;
    for (int64_t kh = 0; kh < s.kh; ++kh) {
      if (int64_t& slot = phase_row_[kh * s.dil_h % s.stride_h]; slot < 0) slot = rows_used++;
    }
    for (int64_t kw = 0; kw < s.kw; ++kw) {
      if (int64_t& slot = phase_col_[kw * s.dil_w % s.stride_w]; slot < 0) slot = cols_used_++;
    }
    if (direct_) {
      hq_ = s.h;
      wq_ = s.w;
      plane_ = s.h * s.w;
    } else {
      hq_ = s.oh + (s.kh - 1) * s.dil_h / s.stride_h;
      wq_ = s.ow + (s.kw - 1) * s.dil_w / s.stride_w;
      plane_ = rows_used * cols_used_ * hq_ * wq_;
      buf_.assign(static_cast<size_t>(s.c * plane_ + kLanes), 0.f);
    }
    off_.resize(static_cast<size_t>(k_));
    for (int64_t c = 0; c < s.cg(); ++c) {
      for (int64_t kh = 0; kh < s.kh; ++kh) {
        for (int64_t kw = 0; kw < s.kw; ++kw) {
          const int64_t dy = kh * s.dil_h, dx = kw * s.dil_w;
          const int64_t slot = phase_row_[dy % s.stride_h] * cols_used_ + phase_col_[dx % s.stride_w];
          off_[(c * s.kh + kh) * s.kw + kw] = c * plane_ + slot * hq_ * wq_ + dy / s.stride_h * wq_ + dx / s.stride_w;
        }
      }
    }
  }

  // The flat output range, its 16-lane vectors, and where each vector's valid lanes go in y.
  void plan_output() {
    q_ = (s_.oh - 1) * wq_ + s_.ow;
    nvec_ = (q_ + kLanes - 1) / kLanes;
    vmask_.resize(static_cast<size_t>(nvec_));
    vdst_.resize(static_cast<size_t>(nvec_));
    for (int64_t v = 0; v < nvec_; ++v) {
      uint32_t mask = 0;
      for (int l = 0; l < kLanes; ++l) {
        const int64_t q = v * kLanes + l;
        if (q < q_ && q % wq_ < s_.ow) mask |= 1u << l;
      }
      const int64_t q0 = v * kLanes;
      vmask_[v] = static_cast<__mmask16>(mask);
      vdst_[v] = q0 / wq_ * s_.ow + std::min(q0 % wq_, s_.ow);
    }
  }

  // Register blocking, reduction blocks and the next strip's input lines.
  void plan_blocking() {
    const int64_t cg = s_.cg(), mg = s_.mg(), taps = s_.kh * s_.kw;
    // The register blocking that wastes the fewest FMA slots (ties: the first, 8 x 3).
    blocking_ = &kBlockings[0];
    for (const Blocking& b : kBlockings) {
      if (blocking_cost(b, mg, nvec_) < blocking_cost(*blocking_, mg, nvec_) * 0.97) blocking_ = &b;
    }
    const int64_t mr = blocking_->mr, span = blocking_->nv * kLanes;
    panels_ = (mg + mr - 1) / mr;
    strips_ = (nvec_ + blocking_->nv - 1) / blocking_->nv;
    // What a strip reads of one channel: the union of [off, off + span) over its taps.
    std::vector<int64_t> starts(off_.begin(), off_.begin() + taps);
    std::sort(starts.begin(), starts.end());
    std::vector<std::pair<int64_t, int64_t>> runs;
    for (int64_t o : starts) {
      if (runs.empty() || o > runs.back().second) {
        runs.push_back({o, o + span});
      } else {
        runs.back().second = std::max(runs.back().second, o + span);
      }
    }
    int64_t floats = 0;
    for (const auto& [start, end] : runs) floats += end - start;
    // Reduction blocks of whole input channels: a strip's input for a block fits in half of
    // L1 and the weights of all panels for a block in half of L2, so that both are reused
    // from cache across the panels; blocks of equal size.
    int64_t cb = std::max<int64_t>(1, (24 << 10) / (floats * 4));
    cb = std::min({cb, std::max<int64_t>(1, (1 << 20) / (panels_ * mr * taps * 4)), cg});
    const int64_t blocks = (cg + cb - 1) / cb;
    kb_ = (cg + blocks - 1) / blocks * taps;
    // Per channel: offsets (from a strip's first pixel) of one float in each cache line that
    // the next strip reads and this one does not (the last `span` floats of each run, moved).
    next_begin_.push_back(0);
    for (int64_t c = 0; c < cg; ++c) {
      for (const auto& [start, end] : runs) {
        const int64_t from = span + std::max(start, end - span), to = span + end;
        for (int64_t o = from; o < to + kLanes - 1; o += kLanes) {
          next_off_.push_back(c * plane_ + std::min(o, to - 1));
        }
      }
      next_begin_.push_back(static_cast<int64_t>(next_off_.size()));
    }
  }

  // Thread t's share of the work items (group, strip, panel), taken as runs of panels of one
  // (group, strip).
  void run_thread(const Args& a, int64_t t) const {
    const int64_t items = s_.group * strips_ * panels_;
    const int64_t end = items * (t + 1) / a.threads;
    for (int64_t i = items * t / a.threads; i < end;) {
      const int64_t p0 = i % panels_, p1 = std::min(panels_, p0 + end - i);
      strip(a, acc_ + t * acc_size_, i / (strips_ * panels_), i / panels_ % strips_, p0, p1);
      i += p1 - p0;
    }
  }

  // Panels [p0, p1) of group g over the pixel vectors of strip `st`: reduction blocks outer,
  // panels inner, accumulators kept in `acc` between blocks; the last block stores to y.
  void strip(const Args& a, float* acc, int64_t g, int64_t st, int64_t p0, int64_t p1) const {
    const Blocking& b = *blocking_;
    const int64_t v0 = st * b.nv, nv = std::min<int64_t>(b.nv, nvec_ - v0);
    const bool partial = v0 + nv == nvec_ && q_ % kLanes != 0;
    const MicroFn fn = nv == b.nv && !partial ? b.full : b.tail[nv];
    const __mmask16 mask = partial ? static_cast<__mmask16>((1u << (q_ % kLanes)) - 1) : 0xFFFF;
    const float* xs = a.xq + g * s_.cg() * plane_ + v0 * kLanes;
    const int64_t taps = s_.kh * s_.kw;
    for (int64_t k0 = 0; k0 < k_; k0 += kb_) {
      const int64_t kc = std::min(kb_, k_ - k0);
      const bool last = k0 + kc == k_;
      // The input lines that the next strip adds for this block, handed out over the tiles.
      const int64_t* next = next_off_.data() + next_begin_[k0 / taps];
      const int64_t n_next = st + 1 < strips_ ? next_begin_[(k0 + kc) / taps] - next_begin_[k0 / taps] : 0;
      for (int64_t p = p0; p < p1; ++p) {
        float* io = acc + p * b.mr * b.nv * kLanes;
        const int64_t m0 = g * s_.mg() + p * b.mr, mr = std::min<int64_t>(b.mr, s_.mg() - p * b.mr);
        const float* pf[kMaxPrefetch];
        int64_t npf = last ? out_lines(a, m0, mr, v0, nv, pf) : 0;
        const int64_t j1 = n_next * (p - p0 + 1) / (p1 - p0);
        for (int64_t j = n_next * (p - p0) / (p1 - p0); j < j1 && npf < kMaxPrefetch; ++j) pf[npf++] = xs + next[j];
        fn(xs, off_.data() + k0, w_.data() + ((g * panels_ + p) * k_ + k0) * b.mr, kc, mask, io, k0 > 0, pf, npf);
        if (last) store(a, io, m0, mr, v0, nv);
      }
    }
  }

  // The cache lines of y (and of the residual) that a tile is stored to: prefetched while it
  // is computed so that the stores do not wait for them (y is usually larger than L2).
  int64_t out_lines(const Args& a, int64_t m0, int64_t mr, int64_t v0, int64_t nv, const float** pf) const {
    const int64_t plane_out = s_.oh * s_.ow, d0 = vdst_[v0], d1 = vdst_[v0 + nv - 1] + kLanes;
    int64_t n = 0;
    for (const float* base : {static_cast<const float*>(a.y), a.residual}) {
      if (!base) continue;
      for (int64_t i = 0; i < mr; ++i) {
        const float* row = base + (m0 + i) * plane_out;
        const uintptr_t first = reinterpret_cast<uintptr_t>(row + d0) & ~uintptr_t{63};
        const uintptr_t last = reinterpret_cast<uintptr_t>(row + std::min(d1, plane_out) - 1);
        for (uintptr_t line = first; line <= last && n < kMaxPrefetch; line += 64) {
          pf[n++] = reinterpret_cast<const float*>(line);
        }
      }
    }
    return n;
  }

  // Stores tile rows io[i][v*16 + lane] (i < mr, v < nv) to output channels m0 + i and pixel
  // vectors v0 + v, with bias, residual and activation.
  void store(const Args& a, const float* io, int64_t m0, int64_t mr, int64_t v0, int64_t nv) const {
    switch (ep_.act) {
      case Activation::kNone: return store<Activation::kNone>(a, io, m0, mr, v0, nv);
      case Activation::kRelu: return store<Activation::kRelu>(a, io, m0, mr, v0, nv);
      case Activation::kClip: return store<Activation::kClip>(a, io, m0, mr, v0, nv);
      case Activation::kLeakyRelu: return store<Activation::kLeakyRelu>(a, io, m0, mr, v0, nv);
      default: return;  // refused in supports (Epilogue::simple_activation)
    }
  }
  template <Activation A>
  void store(const Args& a, const float* io, int64_t m0, int64_t mr, int64_t v0, int64_t nv) const {
    const int64_t plane_out = s_.oh * s_.ow;
    const __m512 alpha = _mm512_set1_ps(ep_.alpha), beta = _mm512_set1_ps(ep_.beta);
    float* y = a.y + m0 * plane_out;
    const float* res = a.residual ? a.residual + m0 * plane_out : nullptr;
    const float* bias = bias_.data() + m0;
    for (int64_t v = 0; v < nv; ++v) {
      // Vectors with junk columns are compressed to their valid lanes, contiguous in y.
      const __mmask16 mask = vmask_[v0 + v];
      const bool full = mask == 0xFFFF;
      const __mmask16 head = full ? mask : static_cast<__mmask16>((1u << _mm_popcnt_u32(mask)) - 1);
      const int64_t d = vdst_[v0 + v];
      if (!mask) continue;
      for (int64_t i = 0; i < mr; ++i) {
        __m512 acc = _mm512_add_ps(_mm512_load_ps(io + (i * nv + v) * kLanes), _mm512_set1_ps(bias[i]));
        if (!full) acc = _mm512_maskz_compress_ps(mask, acc);
        if (res) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(head, res + i * plane_out + d));
        _mm512_mask_storeu_ps(y + i * plane_out + d, head, activate<A>(acc, alpha, beta));
      }
    }
  }

  // Copies channels [c0, c1) of one image into buf_: zero-padded and split into the stride
  // phases that are read.
  void pad_split(const float* xn, int64_t c0, int64_t c1) const {
    const int64_t sh = s_.stride_h, sw = s_.stride_w;
    for (int64_t c = c0; c < c1; ++c) {
      const float* xc = xn + c * s_.h * s_.w;
      for (int64_t a = 0; a < sh; ++a) {
        for (int64_t b = 0; b < sw; ++b) {
          if (phase_row_[a] < 0 || phase_col_[b] < 0) continue;
          float* dst = buf_.data() + c * plane_ + (phase_row_[a] * cols_used_ + phase_col_[b]) * hq_ * wq_;
          // Columns j whose input column ix = j*sw + shift lies in [0, W).
          const int64_t shift = b - s_.pad_left;
          const int64_t lo = std::min(shift >= 0 ? 0 : (-shift + sw - 1) / sw, wq_);
          const int64_t hi = std::clamp<int64_t>(s_.w - 1 - shift >= 0 ? (s_.w - 1 - shift) / sw + 1 : 0, lo, wq_);
          for (int64_t r = 0; r < hq_; ++r, dst += wq_) {
            const int64_t iy = r * sh + a - s_.pad_top;
            write_row(dst, iy >= 0 && iy < s_.h ? xc + iy * s_.w : nullptr, wq_, lo, hi, sw, shift);
          }
        }
      }
    }
  }

  // Lanes l of a 16-lane vector with a <= l < b.
  static __mmask16 lanes(int64_t a, int64_t b) {
    const auto bits = [](int64_t n) { return (1u << std::clamp<int64_t>(n, 0, kLanes)) - 1; };
    return static_cast<__mmask16>(bits(b) & ~bits(a));
  }

  // dst[j] = src[j*sw + shift] for j in [lo, hi), 0 for the other j in [0, wq) (all 0 when src
  // is null). Masked loads read only inside the row; masked stores write only [0, wq).
  static void write_row(float* dst, const float* src, int64_t wq, int64_t lo, int64_t hi, int64_t sw, int64_t shift) {
    if (!src) lo = hi = 0;
    if (sw > 2) {
      std::fill(dst, dst + wq, 0.f);
      for (int64_t j = lo; j < hi; ++j) dst[j] = src[j * sw + shift];
      return;
    }
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    for (int64_t j = 0; j < wq; j += kLanes) {
      const __mmask16 valid = lanes(lo - j, hi - j);
      __m512 v = _mm512_setzero_ps();
      if (valid && sw == 1) {
        v = _mm512_maskz_loadu_ps(valid, src + j + shift);
      } else if (valid) {  // even elements of the 32 from src + 2j + shift
        const int64_t first = std::max(lo - j, int64_t{0}), end = std::min(hi - j, int64_t{kLanes});
        const auto bits = [](int64_t n) { return (uint64_t{1} << n) - 1; };
        const uint32_t window = static_cast<uint32_t>(bits(2 * end - 1) & ~bits(2 * first));
        const float* p = src + 2 * j + shift;
        v = _mm512_maskz_permutex2var_ps(valid, _mm512_maskz_loadu_ps(static_cast<__mmask16>(window), p), even,
                                         _mm512_maskz_loadu_ps(static_cast<__mmask16>(window >> 16), p + kLanes));
      }
      _mm512_mask_storeu_ps(dst + j, lanes(0, wq - j), v);
    }
  }

  ConvShape s_;
  Epilogue ep_;
  int threads_;
  bool direct_ = false;
  int64_t k_ = 0, kb_ = 0;                               // reduction length, block
  int64_t hq_ = 0, wq_ = 0, plane_ = 0, cols_used_ = 0;  // input planes (see plan_input)
  int64_t q_ = 0, nvec_ = 0, panels_ = 0, strips_ = 0;   // flat outputs, vectors, tiles
  const Blocking* blocking_ = nullptr;
  std::vector<int64_t> phase_row_, phase_col_;  // stride phase -> slot in a channel's plane, -1: unused
  std::vector<int64_t> off_;                    // per tap k: input offset from the group's first channel
  std::vector<int64_t> next_off_;               // input lines the next strip adds (see the constructor)
  std::vector<int64_t> next_begin_;             // per channel c: its entries in next_off_ start here
  std::vector<__mmask16> vmask_;                // per pixel vector: lanes that are real output pixels
  std::vector<int64_t> vdst_;                   // per pixel vector: y offset of its first valid lane
  std::vector<float> w_, bias_;
  mutable std::vector<float> buf_;  // padded, phase-split image (not used when direct_)
  int64_t acc_size_ = 0;
  float* acc_ = nullptr;  // per thread: accumulator tiles of all panels of a strip
};

}  // namespace

std::string implicit_gemm_supports(const ConvShape& s) {
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512vl") ||
      !__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512dq")) {
    return "needs AVX-512 (F, VL, BW, DQ)";
  }
  if (s.group != 1 && s.cg() < 8) {
    return "depthwise or thin grouped conv (C/group = " + std::to_string(s.cg()) +
           " < 8): too little reduction per output for a GEMM";
  }
  return "";
}

std::unique_ptr<ConvKernel> make_implicit_gemm_conv(const ConvShape& s, const float* weight, const float* bias,
                                                    const Epilogue& ep, int threads) {
  return std::make_unique<ImplicitGemmConv>(s, weight, bias, ep, threads);
}

}  // namespace joule::kernels
