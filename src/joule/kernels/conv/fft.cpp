// FFT convolution (FP32, FFTW single precision), stride 1.
//
// A CNN convolution is a correlation: y[o] = sum_a k[a] * xpad[o + a]. With x placed unshifted
// at the origin of an FH x FW zero-filled array and the (dilated) kernel tap a stored at
// (a - pad) mod F, the circular correlation equals the padded linear one on the OH x OW output
// region provided F >= in + max(pad_before, pad_after) and F >= out along each axis: taps that
// read the left pad wrap into the zero tail, taps that read the right pad land in it, and no
// output wraps. F is the smallest 2^a 3^b 5^c 7^d at least that, or a power of two when that is
// cheaper (see fft_size). The correlation theorem gives Y = conj(K) * X per frequency.
//
// Constructor: FFTW plans (kPlanFlags, made under a global mutex: the planner is not thread-safe)
// and the r2c transforms of all kernels, conjugated and pre-scaled by 1/(FH*FW).
// run(): (1) r2c of every input plane; (2) per group and block of frequencies,
// Y[n,m] = sum_c conj(K[m,c]) * X[n,c] (split re/im arrays, blocked by frequency so the block of
// X stays in cache while K streams); (3) c2r of every output plane, crop, epilogue.
// Spectra are stored as [frequency block][plane][kBlock] floats, re and im apart. Only the
// thread-safe new-array execute functions run in run(), on per-thread buffers from fftwf_malloc.
#include "joule/kernels/conv/fft.h"
#include "joule/kernels/parallel.h"

#include <fftw3.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "joule/core/error.h"

namespace joule::kernels {
namespace {

constexpr int64_t kBlock = 16;  // frequencies per multiply-accumulate block
// Planner flags. FFTW_MEASURE plans ran transforms of non-power-of-two sizes up to 2x faster
// here, but cost 0.05-0.7 s per new transform size in the first constructor, and their choice
// (so the last bits of the results) can differ between processes.
constexpr unsigned kPlanFlags = FFTW_ESTIMATE;
// Refuse shapes whose spectra (weights + inputs + outputs) would exceed this many bytes.
constexpr int64_t kMaxSpectrumBytes = int64_t{1} << 30;

std::mutex& planner_mutex() {
  static std::mutex mu;
  return mu;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Transform length for at least n points: the smallest 2^a 3^b 5^c 7^d >= n, or the next power
// of two when that is at most 15% longer (FFTW_ESTIMATE plans for powers of two ran 1.3-3x
// faster per point here, e.g. 64x64 in 13 us against 35 us for 60x60).
int64_t fft_size(int64_t n) {
  int64_t smooth = n;
  for (;; ++smooth) {
    int64_t r = smooth;
    for (int64_t p : {2, 3, 5, 7})
      while (r % p == 0) r /= p;
    if (r == 1) break;
  }
  int64_t pow2 = 1;
  while (pow2 < n) pow2 *= 2;
  return pow2 * 20 <= smooth * 23 ? pow2 : smooth;
}

// FFT size FH x FW (see the top of the file), its r2c frequency count and frequency blocks.
struct FftDims {
  int64_t fh, fw, nf, nblocks;
  explicit FftDims(const ConvShape& s)
      : fh(fft_size(std::max(s.h + std::max(s.pad_top, s.pad_bottom), s.oh))),
        fw(fft_size(std::max(s.w + std::max(s.pad_left, s.pad_right), s.ow))),
        nf(fh * (fw / 2 + 1)),
        nblocks(ceil_div(nf, kBlock)) {}
  int64_t spectrum_bytes(const ConvShape& s) const {
    return int64_t{2 * sizeof(float)} * nblocks * kBlock * (s.m * s.cg() + s.n * s.c + s.n * s.m);
  }
};

// Four floats (SSE2 on the x86-64 baseline); loads and stores go through memcpy.
using v4 = float __attribute__((vector_size(16)));
v4 load4(const float* p) {
  v4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void store4(float* p, v4 v) { std::memcpy(p, &v, sizeof v); }

// Y[m0 + i] = sum_c K[m0 + i, c] * X[c] for i < MB on one frequency block, 4 frequencies at a
// time with the 2 * MB accumulators in registers. k: K of (m0, c = 0), x: X of c = 0, y: Y of
// m0; consecutive c are kBlock floats apart in x and k, consecutive m are cg * kBlock apart in k
// and kBlock apart in y. The re and im parts live in separate arrays.
template <int MB>
void cmac(const float* kr, const float* ki, const float* xr, const float* xi, float* yr, float* yi,
          int64_t cg) {
  for (int64_t f = 0; f < kBlock; f += 4) {
    v4 ar[MB] = {}, ai[MB] = {};
    for (int64_t c = 0; c < cg; ++c) {
      const v4 xre = load4(xr + c * kBlock + f), xim = load4(xi + c * kBlock + f);
#pragma GCC unroll 4
      for (int i = 0; i < MB; ++i) {
        const int64_t o = (i * cg + c) * kBlock + f;
        const v4 kre = load4(kr + o), kim = load4(ki + o);
        ar[i] += kre * xre - kim * xim;
        ai[i] += kre * xim + kim * xre;
      }
    }
#pragma GCC unroll 4
    for (int i = 0; i < MB; ++i) {
      store4(yr + i * kBlock + f, ar[i]);
      store4(yi + i * kBlock + f, ai[i]);
    }
  }
}
using CmacFn = void (*)(const float*, const float*, const float*, const float*, float*, float*, int64_t);
constexpr CmacFn kCmac[4] = {cmac<1>, cmac<2>, cmac<3>, cmac<4>};

class FftConv final : public ConvKernel {
 public:
  FftConv(const ConvShape& s, const float* weight, const float* bias, const Epilogue& ep, int threads);
  ~FftConv() override;
  FftConv(const FftConv&) = delete;
  FftConv& operator=(const FftConv&) = delete;
  void run(const float* x, const float* residual, float* y, ThreadPool& pool) const override;

 private:
  // Spectrum of plane p (of `planes`) <-> the complex r2c layout (fh_ x fc_).
  void store_spectrum(const fftwf_complex* c, std::vector<float>& re, std::vector<float>& im, int64_t planes,
                      int64_t p, float scale, bool conj) const;
  void load_spectrum(const std::vector<float>& re, const std::vector<float>& im, int64_t planes, int64_t p,
                     fftwf_complex* c) const;
  void forward(int64_t slot, int64_t plane, const float* x) const;
  void multiply(int64_t item) const;
  void inverse(int64_t slot, int64_t plane, const float* res, float* y) const;

  ConvShape s_;
  Epilogue ep_;
  int threads_;
  int64_t fh_, fw_, fc_, nf_, nblocks_;
  fftwf_plan r2c_ = nullptr, c2r_ = nullptr;
  std::vector<float> bias_, kre_, kim_;          // conj(K) / (FH*FW): [block][m][c][kBlock]
  mutable std::vector<float> xre_, xim_;         // input spectra: [block][n][c][kBlock]
  mutable std::vector<float> yre_, yim_;         // output spectra: [block][n][m][kBlock]
  struct FftwFree {
    void operator()(float* p) const { fftwf_free(p); }
  };
  std::vector<std::unique_ptr<float, FftwFree>> real_, cplx_;  // per thread: fh x fw, fh x fc x 2
  float* real(int64_t slot) const { return real_[slot].get(); }
  fftwf_complex* cplx(int64_t slot) const { return reinterpret_cast<fftwf_complex*>(cplx_[slot].get()); }
};

FftConv::FftConv(const ConvShape& s, const float* weight, const float* bias, const Epilogue& ep, int threads)
    : s_(s), ep_(ep), threads_(std::max(1, threads)) {
  const FftDims d(s);
  fh_ = d.fh;
  fw_ = d.fw;
  fc_ = fw_ / 2 + 1;
  nf_ = d.nf;
  nblocks_ = d.nblocks;

  // fftwf_malloc gives every buffer the alignment of the planning arrays (buffers of slot 0).
  for (int t = 0; t < threads_; ++t) {
    real_.emplace_back(static_cast<float*>(fftwf_malloc(sizeof(float) * fh_ * fw_)));
    cplx_.emplace_back(static_cast<float*>(fftwf_malloc(sizeof(fftwf_complex) * nf_)));
    if (!real_.back() || !cplx_.back()) fail_internal("fft conv: out of memory");
  }
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    const int h = static_cast<int>(fh_), w = static_cast<int>(fw_);
    r2c_ = fftwf_plan_dft_r2c_2d(h, w, real(0), cplx(0), kPlanFlags);
    c2r_ = fftwf_plan_dft_c2r_2d(h, w, cplx(0), real(0), kPlanFlags);
    if (!r2c_ || !c2r_) {
      if (r2c_) fftwf_destroy_plan(r2c_);
      if (c2r_) fftwf_destroy_plan(c2r_);
      fail_internal("fft conv: FFTW planning failed");
    }
  }

  bias_.assign(s.m, 0.f);
  if (bias) std::copy(bias, bias + s.m, bias_.begin());

  // Kernel spectra: tap (kh, kw) at ((kh*dil_h - pad_top) mod FH, (kw*dil_w - pad_left) mod FW).
  const int64_t cg = s.cg(), kplanes = s.m * cg, padded = nblocks_ * kBlock;
  kre_.assign(padded * kplanes, 0.f);
  kim_.assign(padded * kplanes, 0.f);
  auto wrap = [](int64_t v, int64_t f) { return ((v % f) + f) % f; };
  for (int64_t p = 0; p < kplanes; ++p) {
    float* r = real(0);
    std::fill(r, r + fh_ * fw_, 0.f);
    for (int64_t kh = 0; kh < s.kh; ++kh)
      for (int64_t kw = 0; kw < s.kw; ++kw)
        r[wrap(kh * s.dil_h - s.pad_top, fh_) * fw_ + wrap(kw * s.dil_w - s.pad_left, fw_)] +=
            weight[(p * s.kh + kh) * s.kw + kw];
    fftwf_execute_dft_r2c(r2c_, r, cplx(0));
    store_spectrum(cplx(0), kre_, kim_, kplanes, p, 1.f / static_cast<float>(fh_ * fw_), true);
  }

  xre_.assign(padded * s.n * s.c, 0.f);
  xim_.assign(padded * s.n * s.c, 0.f);
  yre_.assign(padded * s.n * s.m, 0.f);
  yim_.assign(padded * s.n * s.m, 0.f);
}

FftConv::~FftConv() {
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    if (r2c_) fftwf_destroy_plan(r2c_);
    if (c2r_) fftwf_destroy_plan(c2r_);
  }
}

void FftConv::store_spectrum(const fftwf_complex* c, std::vector<float>& re, std::vector<float>& im,
                             int64_t planes, int64_t p, float scale, bool conj) const {
  const float isign = conj ? -scale : scale;
  for (int64_t b = 0; b < nblocks_; ++b) {
    const int64_t f0 = b * kBlock, nf = std::min(kBlock, nf_ - f0), o = (b * planes + p) * kBlock;
    for (int64_t f = 0; f < nf; ++f) {
      re[o + f] = c[f0 + f][0] * scale;
      im[o + f] = c[f0 + f][1] * isign;
    }
  }
}

void FftConv::load_spectrum(const std::vector<float>& re, const std::vector<float>& im, int64_t planes,
                            int64_t p, fftwf_complex* c) const {
  for (int64_t b = 0; b < nblocks_; ++b) {
    const int64_t f0 = b * kBlock, nf = std::min(kBlock, nf_ - f0), o = (b * planes + p) * kBlock;
    for (int64_t f = 0; f < nf; ++f) {
      c[f0 + f][0] = re[o + f];
      c[f0 + f][1] = im[o + f];
    }
  }
}

// Input plane (n, c) -> X.
void FftConv::forward(int64_t slot, int64_t plane, const float* x) const {
  float* r = real(slot);
  std::fill(r, r + fh_ * fw_, 0.f);
  const float* src = x + plane * s_.h * s_.w;
  for (int64_t i = 0; i < s_.h; ++i) std::memcpy(r + i * fw_, src + i * s_.w, sizeof(float) * s_.w);
  fftwf_execute_dft_r2c(r2c_, r, cplx(slot));
  store_spectrum(cplx(slot), xre_, xim_, s_.n * s_.c, plane, 1.f, false);
}

// Item (frequency block, group): Y[n, m] = sum_c K[m, c] * X[n, c] on that block.
void FftConv::multiply(int64_t item) const {
  const int64_t b = item / s_.group, g = item % s_.group, cg = s_.cg(), mg = s_.mg();
  for (int64_t n = 0; n < s_.n; ++n) {
    const int64_t xo = ((b * s_.n + n) * s_.c + g * cg) * kBlock;  // X of (n, first channel of g)
    for (int64_t m = g * mg; m < (g + 1) * mg; m += 4) {
      const int64_t mb = std::min<int64_t>(4, (g + 1) * mg - m);
      const int64_t ko = (b * s_.m + m) * cg * kBlock, yo = ((b * s_.n + n) * s_.m + m) * kBlock;
      kCmac[mb - 1](kre_.data() + ko, kim_.data() + ko, xre_.data() + xo, xim_.data() + xo, yre_.data() + yo,
                    yim_.data() + yo, cg);
    }
  }
}

// Y plane (n, m) -> crop -> epilogue -> y.
void FftConv::inverse(int64_t slot, int64_t plane, const float* res, float* y) const {
  load_spectrum(yre_, yim_, s_.n * s_.m, plane, cplx(slot));
  fftwf_execute_dft_c2r(c2r_, cplx(slot), real(slot));
  const int64_t ow = s_.ow, off = plane * s_.oh * ow;
  const float bias = bias_[plane % s_.m];
  for (int64_t i = 0; i < s_.oh; ++i) {
    float* dst = y + off + i * ow;
    std::memcpy(dst, real(slot) + i * fw_, sizeof(float) * ow);
    ep_.finish(dst, res ? res + off + i * ow : nullptr, ow, bias);
  }
}

void FftConv::run(const float* x, const float* residual, float* y, ThreadPool& pool) const {
  const float* res = ep_.residual ? residual : nullptr;
  for_each_item(pool, threads_, s_.n * s_.c, [&](int64_t slot, int64_t p) { forward(slot, p, x); });
  for_each_item(pool, threads_, nblocks_ * s_.group, [&](int64_t, int64_t item) { multiply(item); });
  for_each_item(pool, threads_, s_.n * s_.m, [&](int64_t slot, int64_t p) { inverse(slot, p, res, y); });
}

}  // namespace

std::string fft_supports(const ConvShape& s) {
  if (s.stride_h != 1 || s.stride_w != 1) return "fft conv needs stride 1";
  const int64_t bytes = FftDims(s).spectrum_bytes(s);
  if (bytes > kMaxSpectrumBytes)
    return "fft conv spectra would take " + std::to_string(bytes >> 20) + " MiB (limit " +
           std::to_string(kMaxSpectrumBytes >> 20) + " MiB)";
  return "";
}

std::unique_ptr<ConvKernel> make_fft_conv(const ConvShape& s, const float* weight, const float* bias,
                                          const Epilogue& ep, int threads) {
  const std::string why = fft_supports(s);
  if (!why.empty()) fail_unsupported(why);
  return std::make_unique<FftConv>(s, weight, bias, ep, threads);
}

}  // namespace joule::kernels
