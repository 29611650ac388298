// im2col + SGEMM convolution. Work items are (image, group, slice of output pixels); a thread
// copies the slice's receptive fields into its own scratch matrix col [K x cols] (K =
// C/g*KH*KW, row r = (c, kh, kw), zeros where a tap falls in the padding) and computes
// y[g*M/g.., slice] = W_g [M/g x K] * col with oneDNN's JIT SGEMM, one thread per call (ldc =
// OH*OW), then applies the epilogue to the slice. 1x1 stride-1 unpadded convs use the input
// itself as col. (OpenBLAS was the SGEMM first: Debian's 0.3.21 runs its AVX2 kernels on
// AVX-512 CPUs, and oneDNN's is 1.4-2x faster on the layers of bench/kernels_bench.)
#include "joule/kernels/conv/im2col_gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "joule/kernels/gemm/sgemm.h"

namespace joule::kernels {

namespace {

class Im2colGemmConv final : public ConvKernel {
 public:
  Im2colGemmConv(const ConvShape& s, const float* weight, const float* bias, const Epilogue& ep, int threads)
      : s_(s), ep_(ep), threads_(std::max(1, threads)) {
    k_ = s.cg() * s.kh * s.kw;
    p_ = s.oh * s.ow;
    w_.assign(weight, weight + s.m * k_);
    if (bias) bias_.assign(bias, bias + s.m);
    direct_ = s.kh == 1 && s.kw == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_top == 0 && s.pad_left == 0 &&
              s.pad_bottom == 0 && s.pad_right == 0;
    // Pixel slice: the col matrix of one slice stays around 1 MiB (cache friendly), but at
    // least 64 pixels wide, and there are enough slices to keep every thread busy.
    int64_t cols = std::max<int64_t>(64, (int64_t{1} << 18) / k_);
    const int64_t planes = s.n * s.group;
    if (planes < threads_) {
      const int64_t per_plane = (threads_ + planes - 1) / planes;
      cols = std::min(cols, (p_ + per_plane - 1) / per_plane);
    }
    cols_ = std::min(cols, p_);
    slices_ = (p_ + cols_ - 1) / cols_;
    if (!direct_) col_.assign(static_cast<size_t>(threads_ * k_ * cols_), 0.f);
  }

  void run(const float* x, const float* residual, float* y, ThreadPool& pool) const override {
    // One chunk per thread (t indexes the scratch). The lambda captures two pointers so that
    // std::function stores it without allocating.
    const Args a{x, residual, y, std::min<int64_t>(threads_, pool.threads())};
    pool.parallel_for(a.threads, [this, &a](int64_t tb, int64_t te) {
      for (int64_t t = tb; t < te; ++t) run_thread(a, t);
    });
  }

 private:
  struct Args {
    const float* x;
    const float* residual;
    float* y;
    int64_t threads;
  };

  void run_thread(const Args& a, int64_t t) const {
    float* col = direct_ ? nullptr : col_.data() + t * k_ * cols_;
    const int64_t items = s_.n * s_.group * slices_;
    for (int64_t i = items * t / a.threads; i < items * (t + 1) / a.threads; ++i) {
      const int64_t slice = i % slices_, ng = i / slices_;
      compute(a.x, a.residual, a.y, ng / s_.group, ng % s_.group, slice * cols_, std::min(p_, (slice + 1) * cols_),
              col);
    }
  }

  // Output pixels [p0, p1) of image n, group g.
  void compute(const float* x, const float* residual, float* y, int64_t n, int64_t g, int64_t p0, int64_t p1,
               float* col) const {
    const int64_t cw = p1 - p0, mg = s_.mg(), cg = s_.cg();
    const float* xg = x + (n * s_.c + g * cg) * s_.h * s_.w;
    const float* b;
    int64_t ldb;
    if (direct_) {
      b = xg + p0;
      ldb = p_;
    } else {
      im2col(xg, p0, p1, col);
      b = col;
      ldb = cw;
    }
    const int64_t m0 = g * mg;
    float* yg = y + (n * s_.m + m0) * p_ + p0;
    sgemm(Blas::kOnednn, 1, false, false, mg, cw, k_, 1.f, w_.data() + m0 * k_, k_, b, ldb, 0.f, yg, p_);
    if (bias_.empty() && !ep_.residual && ep_.act == Activation::kNone) return;
    const float* rg = ep_.residual ? residual + (n * s_.m + m0) * p_ + p0 : nullptr;
    for (int64_t i = 0; i < mg; ++i) {
      ep_.finish(yg + i * p_, rg ? rg + i * p_ : nullptr, cw, bias_.empty() ? 0.f : bias_[m0 + i]);
    }
  }

  // col[r][p - p0] = x[c][oy*sh - pt + kh*dh][ox*sw - pl + kw*dw] (0 in the padding) for the
  // rows r = (c, kh, kw) of one group and output pixels p = oy*OW + ox in [p0, p1).
  void im2col(const float* xg, int64_t p0, int64_t p1, float* col) const {
    const int64_t cw = p1 - p0, ow = s_.ow, sw = s_.stride_w;
    float* dst = col;
    for (int64_t c = 0; c < s_.cg(); ++c) {
      const float* xc = xg + c * s_.h * s_.w;
      for (int64_t kh = 0; kh < s_.kh; ++kh) {
        for (int64_t kw = 0; kw < s_.kw; ++kw, dst += cw) {
          // Output columns whose input column ix = ox*sw + shift lies in [0, W).
          const int64_t shift = kw * s_.dil_w - s_.pad_left;
          const int64_t lo = shift >= 0 ? 0 : (-shift + sw - 1) / sw;
          const int64_t hi = s_.w - 1 - shift >= 0 ? (s_.w - 1 - shift) / sw + 1 : 0;
          for (int64_t oy = p0 / ow; oy * ow < p1; ++oy) {
            const int64_t a = std::max(p0 - oy * ow, int64_t{0}), e = std::min(p1 - oy * ow, ow);
            float* d = dst + oy * ow - p0;
            const int64_t iy = oy * s_.stride_h - s_.pad_top + kh * s_.dil_h;
            if (iy < 0 || iy >= s_.h) {
              std::fill(d + a, d + e, 0.f);
              continue;
            }
            const float* src = xc + iy * s_.w;
            const int64_t va = std::clamp(lo, a, e), ve = std::clamp(hi, va, e);
            std::fill(d + a, d + va, 0.f);
            if (sw == 1) {
              std::memcpy(d + va, src + va + shift, static_cast<size_t>(ve - va) * sizeof(float));
            } else {
              for (int64_t ox = va; ox < ve; ++ox) d[ox] = src[ox * sw + shift];
            }
            std::fill(d + ve, d + e, 0.f);
          }
        }
      }
    }
  }

  ConvShape s_;
  Epilogue ep_;
  int threads_;
  int64_t k_ = 0, p_ = 0, cols_ = 0, slices_ = 0;
  bool direct_ = false;
  std::vector<float> w_, bias_;
  mutable std::vector<float> col_;  // threads_ x [k_ x cols_]
};

}  // namespace

std::string im2col_gemm_supports(const ConvShape&) { return ""; }

std::unique_ptr<ConvKernel> make_im2col_gemm_conv(const ConvShape& s, const float* weight, const float* bias,
                                                  const Epilogue& ep, int threads) {
  return std::make_unique<Im2colGemmConv>(s, weight, bias, ep, threads);
}

}  // namespace joule::kernels
