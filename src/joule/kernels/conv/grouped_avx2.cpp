// Thin grouped convolutions on N,H,W,C tensors with AVX2 + FMA (grouped.h).
//
// Weights are packed once per (group, block of 8 output channels) as [KH][KW][C/group][8]: for
// one tap and one input channel, the 8 outputs' weights are one vector. A block of P output
// columns of one row keeps P x NB sums (NB blocks of 8 channels) in registers; each input value
// is broadcast once and multiplies NB weight vectors. Narrow blocks keep several partial sums
// per output so that enough FMAs are in flight. Columns whose taps all fall inside the row run
// in blocks of 8 (5 with two channel blocks) down to 1; the few at the padded edges run one by
// one with their taps clipped to the row. A task is one output row (groups split only when rows
// are few), its column blocks outermost, so the row's input is read front to back; the next
// output row's input is prefetched a row ahead. The epilogue (bias, residual,
// ReLU/Clip/LeakyReLU) is applied in registers, NaN kept as the reference keeps it.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "joule/core/error.h"
#include "joule/core/thread_pool.h"
#include "joule/kernels/aligned_floats.h"
#include "joule/kernels/conv/avx2_epilogue.h"
#include "joule/kernels/conv/grouped.h"

namespace joule::kernels {
namespace {

class GroupedNhwc final : public ConvKernel {
 public:
  GroupedNhwc(const ConvShape& s, const float* weight, const float* bias, const Epilogue& ep)
      : s_(s), ep_(ep), nob_(s.mg() / 8), taps_(s.kh * s.kw) {
    const int64_t cg = s.cg(), mg = s.mg();
    // Aligned to the cache line: a weight vector never spans two.
    wp_ = alloc_aligned_floats(s.m * cg * taps_);
    float* w = wp_.get();
    for (int64_t g = 0; g < s.group; ++g)
      for (int64_t ob = 0; ob < nob_; ++ob)
        for (int64_t t = 0; t < taps_; ++t)
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t l = 0; l < 8; ++l) {
              const int64_t m = g * mg + ob * 8 + l;
              w[(((g * nob_ + ob) * taps_ + t) * cg + ci) * 8 + l] =
                  weight[(m * cg + ci) * taps_ + t];
            }
    bias_.assign(static_cast<size_t>(s.m), 0.f);
    if (bias) std::copy(bias, bias + s.m, bias_.begin());
    // Output columns whose every tap lies inside the input row: [ow_lo_, ow_hi_).
    const int64_t span = (s.kw - 1) * s.dil_w;
    ow_lo_ = std::min(s.ow, (s.pad_left + s.stride_w - 1) / s.stride_w);
    const int64_t last = s.w - 1 - span + s.pad_left;  // ow * stride <= last
    ow_hi_ = last < 0 ? 0 : std::min(s.ow, last / s.stride_w + 1);
    if (ow_hi_ < ow_lo_) ow_hi_ = ow_lo_;
  }

  void run(const float* x, const float* residual, float* y, ThreadPool& pool) const override {
    const int64_t rows = s_.n * s_.oh;
    // Whole rows per task (the row's pixels read front to back, every group's channels in
    // turn); the groups are split too only when there are few rows for the threads.
    const int64_t parts = std::clamp<int64_t>((4 * pool.threads() + rows - 1) / rows, 1, s_.group);
    pool.parallel_for(rows * parts, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t r = i / parts, k = i % parts;
        row(x, residual, y, r, s_.group * k / parts, s_.group * (k + 1) / parts);
      }
    });
  }

  // finish() reads each residual vector just before it stores the output vector there.
  bool residual_in_place() const override { return true; }

 private:
  // Groups [g0, g1) of one output row (image n, row oh): every column, every block of 8
  // channels, column blocks outermost.
  void row(const float* x, const float* res, float* y, int64_t r, int64_t g0, int64_t g1) const {
    Row w;
    const int64_t n = r / s_.oh, oh = r % s_.oh;
    w.xn = x + n * s_.h * s_.w * s_.c;
    w.yr = y + r * s_.ow * s_.m;
    w.rr = res ? res + r * s_.ow * s_.m : nullptr;
    w.g0 = g0;
    w.g1 = g1;
    // The kernel rows inside the input.
    w.kh0 = 0;
    w.kh1 = s_.kh;
    w.ih0 = oh * s_.stride_h - s_.pad_top;
    while (w.kh0 < w.kh1 && w.ih0 + w.kh0 * s_.dil_h < 0) ++w.kh0;
    while (w.kh1 > w.kh0 && w.ih0 + (w.kh1 - 1) * s_.dil_h >= s_.h) --w.kh1;
    for (int64_t ow = 0; ow < ow_lo_; ++ow) blocks<1>(w, ow, true);
    int64_t ow = ow_lo_;
    if (nob_ >= 2) {
      for (; ow + 5 <= ow_hi_; ow += 5) blocks<5>(w, ow);
    } else {
      for (; ow + 8 <= ow_hi_; ow += 8) blocks<8>(w, ow);
    }
    if (ow + 4 <= ow_hi_) blocks<4>(w, ow), ow += 4;
    if (ow + 2 <= ow_hi_) blocks<2>(w, ow), ow += 2;
    if (ow < ow_hi_) blocks<1>(w, ow), ++ow;
    for (ow = std::max(ow_hi_, ow_lo_); ow < s_.ow; ++ow) blocks<1>(w, ow, true);
  }

  struct Row {
    const float* xn;  // image n, at channel 0
    float* yr;        // output row, at channel 0
    const float* rr;  // residual row or null
    int64_t g0, g1, ih0, kh0, kh1;
  };

  // P columns from `ow` for each group and block of 8 channels; `edge`: one column whose taps
  // are clipped to the input row (else every tap lies inside it).
  template <int P>
  void blocks(const Row& w, int64_t ow, bool edge = false) const {
    int64_t kw0 = 0, kw1 = s_.kw;
    const int64_t iw0 = ow * s_.stride_w - s_.pad_left;
    if (edge) {
      while (kw0 < kw1 && iw0 + kw0 * s_.dil_w < 0) ++kw0;
      while (kw1 > kw0 && iw0 + (kw1 - 1) * s_.dil_w >= s_.w) --kw1;
    } else {
      // This block's columns of the next output row's input rows: large inputs (batch 8) come
      // from memory, and a row ahead leaves the time to fetch them.
      const int64_t from = std::max<int64_t>(0, iw0) * s_.c + w.g0 * s_.cg();
      const int64_t to = std::min(s_.w, iw0 + (P - 1) * s_.stride_w + (s_.kw - 1) * s_.dil_w + 1) * s_.c;
      const int64_t end = to - (s_.group - w.g1) * s_.cg();
      for (int64_t kh = 0; kh < s_.kh; ++kh) {
        const int64_t ih = w.ih0 + s_.stride_h + kh * s_.dil_h;
        if (ih < 0 || ih >= s_.h) continue;
        const float* xr = w.xn + ih * s_.w * s_.c;
        for (int64_t i = from; i < end; i += 16) _mm_prefetch(reinterpret_cast<const char*>(xr + i), _MM_HINT_T0);
      }
    }
    Taps t;
    t.x = w.xn + (w.ih0 + w.kh0 * s_.dil_h) * s_.w * s_.c + iw0 * s_.c;
    t.row_step = s_.dil_h * s_.w * s_.c;
    t.tap_step = s_.dil_w * s_.c;
    t.col_step = s_.stride_w * s_.c;
    t.rows = w.kh1 - w.kh0;
    t.kw = s_.kw;
    t.kw0 = kw0;
    t.kw1 = kw1;
    t.cg = s_.cg();
    t.wstride = taps_ * s_.cg() * 8;
    for (int64_t g = w.g0; g < w.g1; ++g) {
      int64_t ob = 0;
      for (; ob + 2 <= nob_; ob += 2) block<2, P>(t, w, g, ob, ow);
      if (ob < nob_) block<1, P>(t, w, g, ob, ow);
    }
  }

  // Where the taps of a block are: x at x + row * row_step + tap * tap_step + column * col_step
  // + ci (rows from the first inside the input, taps [kw0, kw1) of kw); weights packed
  // [rows][kw][cg][8], block b of channels at + b * wstride.
  struct Taps {
    const float* x;
    int64_t row_step, tap_step, col_step, rows, kw, kw0, kw1, cg, wstride;
  };

  const float* weights(int64_t g, int64_t ob, int64_t t) const {
    return wp_.get() + ((g * nob_ + ob) * taps_ + t) * s_.cg() * 8;
  }

  template <int NB, int P>
  void block(const Taps& t0, const Row& w, int64_t g, int64_t ob, int64_t ow) const {
    // Fewer than 8 sums in flight leave the FMA units waiting on their latency: narrow blocks
    // keep S partial sums per output, over alternate input channels.
    constexpr int S = P * NB >= 8 ? 1 : P * NB >= 4 ? 2 : P * NB >= 2 ? 4 : 8;
    __m256 acc[P][NB];
    Taps t = t0;
    t.x += g * s_.cg();
    accumulate<NB, P, S>(t, weights(g, ob, w.kh0 * s_.kw), acc);
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p)
#pragma GCC unroll 2
      for (int b = 0; b < NB; ++b)
        finish(acc[p][b], w, ow + p, g * s_.mg() + (ob + b) * 8);
  }

  template <int NB, int P, int S>
  static void accumulate(const Taps& t, const float* __restrict w, __m256 (&out)[P][NB]) {
    __m256 acc[S][P][NB];
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s)
#pragma GCC unroll 8
      for (int p = 0; p < P; ++p)
#pragma GCC unroll 2
        for (int b = 0; b < NB; ++b) acc[s][p][b] = _mm256_setzero_ps();
    const int64_t cg = t.cg, split = cg / S * S;
    for (int64_t r = 0; r < t.rows; ++r)
      for (int64_t k = t.kw0; k < t.kw1; ++k) {
        const float* __restrict xp = t.x + r * t.row_step + k * t.tap_step;
        const float* __restrict wt = w + (r * t.kw + k) * cg * 8;
        int64_t ci = 0;
        for (; ci < split; ci += S) {
#pragma GCC unroll 8
          for (int s = 0; s < S; ++s) {
            __m256 wv[NB];
#pragma GCC unroll 2
            for (int b = 0; b < NB; ++b) wv[b] = _mm256_loadu_ps(wt + b * t.wstride + (ci + s) * 8);
#pragma GCC unroll 8
            for (int p = 0; p < P; ++p) {
              const __m256 v = _mm256_broadcast_ss(xp + p * t.col_step + ci + s);
#pragma GCC unroll 2
              for (int b = 0; b < NB; ++b) acc[s][p][b] = _mm256_fmadd_ps(v, wv[b], acc[s][p][b]);
            }
          }
        }
        for (; ci < cg; ++ci)
#pragma GCC unroll 8
          for (int p = 0; p < P; ++p)
#pragma GCC unroll 2
            for (int b = 0; b < NB; ++b)
              acc[0][p][b] = _mm256_fmadd_ps(_mm256_broadcast_ss(xp + p * t.col_step + ci),
                                             _mm256_loadu_ps(wt + b * t.wstride + ci * 8), acc[0][p][b]);
      }
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p)
#pragma GCC unroll 2
      for (int b = 0; b < NB; ++b) {
        __m256 v = acc[0][p][b];
#pragma GCC unroll 8
        for (int s = 1; s < S; ++s) v = _mm256_add_ps(v, acc[s][p][b]);
        out[p][b] = v;
      }
  }

  // y = act(acc + bias + residual) for channels [m, m + 8) of column `col` of the row.
  void finish(__m256 v, const Row& w, int64_t col, int64_t m) const {
    const int64_t at = col * s_.m + m;
    v = _mm256_add_ps(v, _mm256_loadu_ps(bias_.data() + m));
    if (w.rr) v = _mm256_add_ps(v, _mm256_loadu_ps(w.rr + at));
    _mm256_storeu_ps(w.yr + at, avx2_activate(v, ep_));
  }

  ConvShape s_;
  Epilogue ep_;
  int64_t nob_, taps_, ow_lo_ = 0, ow_hi_ = 0;
  AlignedFloats wp_;  // the packed weights
  std::vector<float> bias_;
};

}  // namespace

std::unique_ptr<ConvKernel> make_grouped_nhwc_conv(const ConvShape& s, const float* weight, const float* bias,
                                                   const Epilogue& ep) {
  if (std::string r = grouped_nhwc_supports(s); !r.empty()) fail_unsupported("grouped: " + r);
  if (std::string r = ep.simple_activation(); !r.empty()) fail_unsupported("grouped: " + r);
  return std::make_unique<GroupedNhwc>(s, weight, bias, ep);
}

}  // namespace joule::kernels
