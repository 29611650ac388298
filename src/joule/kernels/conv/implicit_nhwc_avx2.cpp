// Dense convolutions on N,H,W,C tensors as an implicit GEMM, AVX2 + FMA (implicit_nhwc.h).
//
// The product: output pixels (rows) x output channels (columns), reduced over k = (kernel row,
// kernel column, input channel), which is the order an N,H,W,C input lies in: for one pixel and
// one kernel row, the taps of all kernel columns are KW x C contiguous floats (dilation 1).
// The weights are packed once in panels of 16 output channels, [panel][k][16] (zero columns past
// M). The reduction runs in blocks of at most 256 values of k, so that a panel's block (16 KB)
// stays in L1 while a block of pixels passes over it: 6 pixels x 16 channels of sums in 12 ymm
// registers, per k two weight vectors and 6 broadcasts. A 1x1 conv without pads reads its rows
// straight from the input (any stride); other convs copy each block of pixels' rows of the
// block of k into a per-thread buffer first (zeros for the pads), a few contiguous runs per
// pixel. The first block of k adds the residual, later blocks what the output holds; the last
// applies bias and ReLU/Clip/LeakyReLU (NaN kept as the reference keeps it).
// Work items are blocks of pixels, with the panels split too when the blocks are fewer than the
// threads want.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "joule/core/error.h"
#include "joule/core/thread_pool.h"
#include "joule/kernels/aligned_floats.h"
#include "joule/kernels/conv/avx2_epilogue.h"
#include "joule/kernels/conv/implicit_nhwc.h"

namespace joule::kernels {
namespace {

constexpr int kMr = 6;         // pixels per register tile
constexpr int kNr = 16;        // output channels per panel (two vectors)
constexpr int64_t kKc = 256;   // most values of k per block: a panel's block is 16 KB
constexpr int64_t kABytes = 128 * 1024;  // a block of pixels' rows of one block of k (L2)
constexpr int64_t kBBytes = 256 * 1024;  // a group of panels' block of weights (L2)

class ImplicitNhwc final : public ConvKernel {
 public:
  ImplicitNhwc(const ConvShape& s, const float* weight, const float* bias, const Epilogue& ep, int threads)
      : s_(s), ep_(ep), k_(s.kh * s.kw * s.c), np_((s.m + kNr - 1) / kNr), threads_(std::max(1, threads)) {
    const int64_t taps = s.kh * s.kw;
    wp_ = alloc_aligned_floats(np_ * k_ * kNr);
    float* w = wp_.get();
    for (int64_t m = 0; m < s.m; ++m)
      for (int64_t t = 0; t < taps; ++t)
        for (int64_t ci = 0; ci < s.c; ++ci)
          w[((m / kNr) * k_ + t * s.c + ci) * kNr + m % kNr] = weight[(m * s.c + ci) * taps + t];
    bias_.assign(static_cast<size_t>(np_ * kNr), 0.f);
    if (bias) std::copy(bias, bias + s.m, bias_.begin());
    const int64_t nk = (k_ + kKc - 1) / kKc;
    kc_ = (k_ + nk - 1) / nk;
    mc_ = std::clamp<int64_t>(kABytes / (4 * kc_) / kMr * kMr, kMr, 40 * kMr);
    pixels_ = s.n * s.oh * s.ow;
    direct_ = s.kh == 1 && s.kw == 1 && s.pad_top == 0 && s.pad_left == 0 && s.pad_bottom == 0 && s.pad_right == 0;
    if (!direct_) abuf_.assign(static_cast<size_t>(threads_ * mc_ * kc_), 0.f);
  }

  bool residual_in_place() const override { return true; }

  void run(const float* x, const float* residual, float* y, ThreadPool& pool) const override {
    const int64_t mblocks = (pixels_ + mc_ - 1) / mc_;
    const int64_t slots = std::min<int64_t>(threads_, pool.threads());
    // Few blocks of pixels for the threads: split the panels as well.
    const int64_t nsplit = std::clamp<int64_t>((2 * slots + mblocks - 1) / mblocks, 1, np_);
    const Args a{x, residual, y, slots, mblocks * nsplit, nsplit};
    // Captures two pointers, so std::function stores it without allocating.
    pool.parallel_for(slots, [this, &a](int64_t tb, int64_t te) {
      for (int64_t t = tb; t < te; ++t)
        for (int64_t i = a.items * t / a.slots; i < a.items * (t + 1) / a.slots; ++i) item(a, i, t);
    });
  }

 private:
  struct Args {
    const float* x;
    const float* residual;
    float* y;
    int64_t slots, items, nsplit;
  };

  // Pixels [p0, p0 + mc_) x panels [j0, j1) of item i, on packing buffer `slot`.
  void item(const Args& a, int64_t i, int64_t slot) const {
    const int64_t mb = i / a.nsplit, part = i % a.nsplit;
    const int64_t p0 = mb * mc_, p1 = std::min(pixels_, p0 + mc_);
    const int64_t j0 = np_ * part / a.nsplit, j1 = np_ * (part + 1) / a.nsplit;
    const float* rows[40 * kMr];
    float* buf = direct_ ? nullptr : abuf_.data() + slot * mc_ * kc_;
    for (int64_t k0 = 0; k0 < k_; k0 += kc_) {
      const int64_t kc = std::min(kc_, k_ - k0);
      for (int64_t p = p0; p < p1; ++p) {
        if (direct_) {
          rows[p - p0] = a.x + pixel_offset(p) + k0;
        } else {
          float* d = buf + (p - p0) * kc;
          pack_row(a.x, p, k0, k0 + kc, d);
          rows[p - p0] = d;
        }
      }
      const bool first = k0 == 0, last = k0 + kc == k_;
      // Panels in groups whose block of weights stays in L2; each tile of pixels (its rows in
      // L1) passes over a whole group, writing its outputs' channels of the group contiguously.
      const int64_t group = std::max<int64_t>(1, kBBytes / (kc * kNr * 4));
      for (int64_t jg = j0; jg < j1; jg += group) {
        const int64_t jend = std::min(j1, jg + group);
        int64_t p = p0;
        for (; p + kMr <= p1; p += kMr) {
          for (int64_t j = jg; j < jend; ++j) tile<kMr>(rows + (p - p0), wp_.get() + (j * k_ + k0) * kNr, kc, a, p, j, first, last);
        }
        for (int64_t j = jg; j < jend; ++j) {
          const float* b = wp_.get() + (j * k_ + k0) * kNr;
          switch (p1 - p) {
            case 5: tile<5>(rows + (p - p0), b, kc, a, p, j, first, last); break;
            case 4: tile<4>(rows + (p - p0), b, kc, a, p, j, first, last); break;
            case 3: tile<3>(rows + (p - p0), b, kc, a, p, j, first, last); break;
            case 2: tile<2>(rows + (p - p0), b, kc, a, p, j, first, last); break;
            case 1: tile<1>(rows + (p - p0), b, kc, a, p, j, first, last); break;
            default: break;
          }
        }
      }
    }
  }

  // Offset in x of the input of a 1x1 conv without pads for output pixel p.
  int64_t pixel_offset(int64_t p) const {
    const int64_t n = p / (s_.oh * s_.ow), r = p % (s_.oh * s_.ow), oh = r / s_.ow, ow = r % s_.ow;
    return ((n * s_.h + oh * s_.stride_h) * s_.w + ow * s_.stride_w) * s_.c;
  }

  // Values [k0, k1) of pixel p's row of the implicit matrix into d (zeros where a tap is in
  // the pads).
  void pack_row(const float* x, int64_t p, int64_t k0, int64_t k1, float* d) const {
    const int64_t n = p / (s_.oh * s_.ow), r = p % (s_.oh * s_.ow), oh = r / s_.ow, ow = r % s_.ow;
    const int64_t ih0 = oh * s_.stride_h - s_.pad_top, iw0 = ow * s_.stride_w - s_.pad_left;
    const int64_t row_len = s_.kw * s_.c;
    auto zero = [&](int64_t from, int64_t to) {
      if (to > from) std::memset(d + (from - k0), 0, static_cast<size_t>(to - from) * sizeof(float));
    };
    for (int64_t kh = k0 / row_len; kh * row_len < k1; ++kh) {
      const int64_t a = std::max(k0, kh * row_len), b = std::min(k1, (kh + 1) * row_len);
      const int64_t ih = ih0 + kh * s_.dil_h;
      if (ih < 0 || ih >= s_.h) {
        zero(a, b);
        continue;
      }
      const float* xr = x + (n * s_.h + ih) * s_.w * s_.c;
      const int64_t base = kh * row_len;  // k of this kernel row's first tap
      if (s_.dil_w == 1) {
        // Offset o in the kernel row is x[ih][iw0 + o / C][o % C]: contiguous where iw is inside.
        const int64_t lo = std::clamp(base - iw0 * s_.c, a, b), hi = std::clamp(base + (s_.w - iw0) * s_.c, a, b);
        zero(a, lo);
        if (hi > lo) std::memcpy(d + (lo - k0), xr + iw0 * s_.c + (lo - base), static_cast<size_t>(hi - lo) * sizeof(float));
        zero(std::max(lo, hi), b);
        continue;
      }
      for (int64_t kw = (a - base) / s_.c; base + kw * s_.c < b; ++kw) {
        const int64_t ta = std::max(a, base + kw * s_.c), tb = std::min(b, base + (kw + 1) * s_.c);
        const int64_t iw = iw0 + kw * s_.dil_w;
        if (iw < 0 || iw >= s_.w) {
          zero(ta, tb);
        } else {
          std::memcpy(d + (ta - k0), xr + iw * s_.c + (ta - base - kw * s_.c), static_cast<size_t>(tb - ta) * sizeof(float));
        }
      }
    }
  }

  // R pixels from p x panel j over one block of k: the first block's sums plus the residual,
  // later blocks' plus what the output holds; the last applies bias and activation. The
  // residual is read only by the first block, each vector just before the output vector at
  // the same place is stored, so it may be the output itself (residual_in_place).
  template <int R>
  void tile(const float* const* rows, const float* b, int64_t kc, const Args& a, int64_t p, int64_t j, bool first,
            bool last) const {
    __m256 acc[R][2];
    accumulate<R>(rows, b, kc, acc);
    const int64_t m0 = j * kNr;
    for (int r = 0; r < R; ++r) {
      float* yr = a.y + (p + r) * s_.m;
      const float* add = first ? (a.residual ? a.residual + (p + r) * s_.m : nullptr) : yr;
      for (int v = 0; v < 2; ++v) {
        const int64_t m = m0 + 8 * v;
        if (m + 8 <= s_.m) {
          __m256 s = acc[r][v];
          if (add) s = _mm256_add_ps(s, _mm256_loadu_ps(add + m));
          if (last) s = finish(s, m);
          _mm256_storeu_ps(yr + m, s);
        } else if (m < s_.m) {
          alignas(32) float t[8];
          _mm256_store_ps(t, acc[r][v]);
          for (int64_t l = 0; l < s_.m - m; ++l) {
            float s = t[l] + (add ? add[m + l] : 0.f);
            if (last) s = ep_.apply(s + bias_[static_cast<size_t>(m + l)]);
            yr[m + l] = s;
          }
        }
      }
    }
  }

  // The sums live in a local array (registers): written through `out` in the loop, GCC would
  // store them after every FMA, not knowing that the loads do not alias them.
  template <int R>
  static void accumulate(const float* const* rows, const float* __restrict b, int64_t kc, __m256 (&out)[R][2]) {
    const float* __restrict x[R];
    __m256 acc[R][2];
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      x[r] = rows[r];
      acc[r][0] = _mm256_setzero_ps();
      acc[r][1] = _mm256_setzero_ps();
    }
#pragma GCC unroll 2
    for (int64_t k = 0; k < kc; ++k) {
      const __m256 b0 = _mm256_load_ps(b + k * kNr), b1 = _mm256_load_ps(b + k * kNr + 8);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        const __m256 v = _mm256_broadcast_ss(x[r] + k);
        acc[r][0] = _mm256_fmadd_ps(v, b0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(v, b1, acc[r][1]);
      }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      out[r][0] = acc[r][0];
      out[r][1] = acc[r][1];
    }
  }

  // act(v + bias) for channels [m, m + 8).
  __m256 finish(__m256 v, int64_t m) const {
    return avx2_activate(_mm256_add_ps(v, _mm256_loadu_ps(bias_.data() + m)), ep_);
  }

  ConvShape s_;
  Epilogue ep_;
  int64_t k_, np_, kc_ = 0, mc_ = 0, pixels_ = 0;
  int threads_;
  bool direct_ = false;
  AlignedFloats wp_;  // the packed weights
  std::vector<float> bias_;
  mutable std::vector<float> abuf_;  // one block of packed rows per thread
};

}  // namespace

std::unique_ptr<ConvKernel> make_implicit_nhwc_conv(const ConvShape& s, const float* weight, const float* bias,
                                                    const Epilogue& ep, int threads) {
  if (std::string r = implicit_nhwc_supports(s); !r.empty()) fail_unsupported("implicit_nhwc: " + r);
  if (std::string r = ep.simple_activation(); !r.empty()) fail_unsupported("implicit_nhwc: " + r);
  return std::make_unique<ImplicitNhwc>(s, weight, bias, ep, threads);
}

}  // namespace joule::kernels
