// Direct convolution (FP32, AVX-512): the plain sum over (c, kh, kw), organised for vectors.
//
// Work items are (image, group, band of output rows[, slice of output channels]), split
// statically over the threads. For an item the thread first copies the input rows the band
// reads (all channels of the group) into its own zero-padded buffer whose columns are split
// into stride_w phases: phase p holds the padded columns p, p + sw, p + 2 sw, ... So for every
// stride, dilation and pad, the inputs one kernel tap contributes to 16 consecutive outputs of
// a row are one contiguous (unaligned) load, and borders need no tests. Rows are padded to
// whole 16-float output vectors (the tail lanes are computed and not stored).
//  * General path: a register tile of 6 output channels x 4 output vectors accumulates
//    sum_{c,kh,kw} w * x, broadcasting weights. The weights are repacked in the constructor as
//    [group][block of 6 channels][c][kh][kw][6] so the tile streams them contiguously. The 4
//    vectors run along a row, or down a column when a row tile's input would overflow L1.
//  * Depthwise path (C/group == 1, 3x3 or 5x5, stride 1 or 2 in both axes, dilation 1): the
//    K*K weights stay in registers and 4 output rows x 2 output vectors are computed per pass,
//    each input vector loaded once for all the output rows it feeds. Stride 1 reads the input
//    itself (masked loads zero the left / right pads, a zero row stands in for the top /
//    bottom ones); stride 2 reads the phase-split band buffer.
// The epilogue (bias, residual, activation; same results as Epilogue::apply) is applied in
// registers before a masked store of each output vector.
#include "joule/kernels/conv/direct.h"
#include "joule/kernels/parallel.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace joule::kernels {
namespace {

constexpr int kMR = 6;                      // output channels per register tile
constexpr int kNV = 4;                      // 16-float output vectors per register tile
constexpr int kDwRows = 4;                  // output rows per pass of the depthwise path
constexpr int64_t kBandFloats = 64 * 1024;  // target size of one thread's band buffer (L2)
constexpr int64_t kDwBandFloats = 6 * 1024;  // same for the depthwise path (L1)

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Mask of the first min(n, 16) lanes.
__mmask16 lanes(int64_t n) { return n >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << n) - 1); }

// Short zero-fills and copies with vector stores (cheaper than libc calls at these sizes).
void zero(float* d, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) _mm512_mask_storeu_ps(d + i, lanes(n - i), _mm512_setzero_ps());
}
void copy(float* d, const float* s, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = lanes(n - i);
    _mm512_mask_storeu_ps(d + i, k, _mm512_maskz_loadu_ps(k, s + i));
  }
}

// max / min with all lanes enabled: the zero-masked forms avoid GCC 12's spurious
// -Wmaybe-uninitialized on _mm512_undefined_ps inside the plain intrinsics.
__m512 vmax(__m512 a, __m512 b) { return _mm512_maskz_max_ps(0xFFFF, a, b); }  // a > b ? a : b
__m512 vmin(__m512 a, __m512 b) { return _mm512_maskz_min_ps(0xFFFF, a, b); }  // a < b ? a : b

// Vector form of Epilogue::apply with identical results (operand order keeps NaN behaviour).
struct VecEpilogue {
  Activation act = Activation::kNone;
  __m512 alpha, beta;

  explicit VecEpilogue(const Epilogue& ep)
      : act(ep.act), alpha(_mm512_set1_ps(ep.alpha)), beta(_mm512_set1_ps(ep.beta)) {}

  // y[0..16) (lanes in k) = act(acc + bias + res).
  void store(float* y, const float* res, __mmask16 k, __m512 acc, __m512 bias) const {
    __m512 v = _mm512_add_ps(acc, bias);
    if (res) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, res));
    const __m512 zero = _mm512_setzero_ps();
    switch (act) {
      case Activation::kNone: break;
      case Activation::kRelu: v = vmax(zero, v); break;  // NaN (the second operand) stays
      case Activation::kClip: v = vmin(beta, vmax(alpha, v)); break;
      case Activation::kLeakyRelu:
        v = _mm512_mask_mov_ps(_mm512_mul_ps(v, alpha), _mm512_cmp_ps_mask(v, zero, _CMP_GE_OQ), v);
        break;
      default: break;  // refused in supports (Epilogue::simple_activation)
    }
    _mm512_mask_storeu_ps(y, k, v);
  }
};

// One register tile of the general path: MR output channels x NV output vectors.
struct Tile {
  const float* w;        // packed weights of the channel block: [cg][taps][MR]
  const float* x;        // band buffer
  int64_t cg, cpitch, ntaps;
  const int64_t* taps;   // offset of each tap in the band buffer
  int64_t xo[kNV];       // band buffer offset of each output vector
  int64_t yo[kNV];       // offset of each output vector in an output plane
  __mmask16 mask[kNV];   // valid lanes of each output vector
  float* y;              // output plane of the block's first channel
  const float* res;      // residual plane of the block's first channel, or null
  int64_t plane;         // OH * OW
  const float* bias;     // bias of the block's first channel
  const VecEpilogue* epi;
};

template <int MR, int NV>
void tile_kernel(const Tile& a) {
  __m512 acc[MR][NV];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
  int64_t xo[NV];
  for (int v = 0; v < NV; ++v) xo[v] = a.xo[v];
  const float* w = a.w;
  const float* xc = a.x;
  for (int64_t c = 0; c < a.cg; ++c, xc += a.cpitch) {
    for (int64_t t = 0; t < a.ntaps; ++t, w += MR) {
      const float* p = xc + a.taps[t];
      __m512 xv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) xv[v] = _mm512_loadu_ps(p + xo[v]);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const __m512 wb = _mm512_set1_ps(w[i]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(wb, xv[v], acc[i][v]);
      }
    }
  }
  for (int i = 0; i < MR; ++i) {
    const __m512 b = _mm512_set1_ps(a.bias[i]);
    for (int v = 0; v < NV; ++v) {
      const int64_t o = i * a.plane + a.yo[v];
      a.epi->store(a.y + o, a.res ? a.res + o : nullptr, a.mask[v], acc[i][v], b);
    }
  }
}

using TileFn = void (*)(const Tile&);
template <int MR>
constexpr TileFn kTileRow[kNV] = {tile_kernel<MR, 1>, tile_kernel<MR, 2>, tile_kernel<MR, 3>,
                                  tile_kernel<MR, 4>};
constexpr const TileFn* kTiles[kMR] = {kTileRow<1>, kTileRow<2>, kTileRow<3>,
                                       kTileRow<4>, kTileRow<5>, kTileRow<6>};

// NR output rows of one depthwise channel: K x K kernel, stride S, dilation 1. rows[r] is the
// row feeding kernel row r of the first output row, r < (NR - 1) * S + K.
//  * S == 1 reads the input directly: rows are input rows (a zero row stands in for the top
//    and bottom pads) and tap kw of output vector j loads columns j*16 + kw - pad_left + [0, 16)
//    masked to [0, w), so the left and right pads read as zero.
//  * S == 2 reads a band buffer (see fill_band): tap kw loads phase kw % 2 at j*16 + kw / 2.
struct DwRows {
  const float* rows[(kDwRows - 1) * 2 + 5];
  int64_t pw;          // S == 2: phase length
  int64_t pad_left, w; // S == 1: input geometry
  int64_t nvw;
  __mmask16 tail;      // valid lanes of each row's last vector
  const float* wt;     // K*K weights
  float* y;            // first output row
  const float* res;    // first residual row, or null
  int64_t ow;
  float bias;
  const VecEpilogue* epi;
};

// Output vectors j .. j + JV - 1 of the NR rows; w: the K*K weights broadcast.
template <int K, int S, int NR, int JV>
inline __attribute__((always_inline)) void dw_block(const DwRows& a, const __m512* w, int64_t j) {
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  int64_t col[JV][K];    // offset of tap kw's vector in a row
  __mmask16 in[JV][K];   // S == 1: lanes inside the input row
  for (int v = 0; v < JV; ++v)
#pragma GCC unroll 5
    for (int kw = 0; kw < K; ++kw) {
      if constexpr (S == 1) {
        col[v][kw] = (j + v) * 16 + kw - a.pad_left;
        const __m512i c = _mm512_add_epi32(iota, _mm512_set1_epi32(static_cast<int>(col[v][kw])));
        in[v][kw] = _mm512_cmpge_epi32_mask(c, _mm512_setzero_si512()) &
                    _mm512_cmplt_epi32_mask(c, _mm512_set1_epi32(static_cast<int>(a.w)));
      } else {
        col[v][kw] = (kw % S) * a.pw + (j + v) * 16 + kw / S;
        in[v][kw] = 0xFFFF;
      }
    }
  __m512 acc[JV][NR];
  for (int v = 0; v < JV; ++v)
#pragma GCC unroll 4
    for (int i = 0; i < NR; ++i) acc[v][i] = _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int r = 0; r < (NR - 1) * S + K; ++r) {
    // Address arithmetic in integers: masked-off lanes may lie before the row.
    const uintptr_t row = reinterpret_cast<uintptr_t>(a.rows[r]);
#pragma GCC unroll 5
    for (int kw = 0; kw < K; ++kw)
#pragma GCC unroll 2
      for (int v = 0; v < JV; ++v) {
        const float* p = reinterpret_cast<const float*>(row + sizeof(float) * col[v][kw]);
        const __m512 xv = S == 1 ? _mm512_maskz_loadu_ps(in[v][kw], p) : _mm512_loadu_ps(p);
#pragma GCC unroll 4
        for (int i = 0; i < NR; ++i) {
          const int kh = r - i * S;
          if (kh >= 0 && kh < K) acc[v][i] = _mm512_fmadd_ps(w[kh * K + kw], xv, acc[v][i]);
        }
      }
  }
  const __m512 bias = _mm512_set1_ps(a.bias);
  for (int v = 0; v < JV; ++v) {
    const __mmask16 k = j + v == a.nvw - 1 ? a.tail : static_cast<__mmask16>(0xFFFF);
    for (int i = 0; i < NR; ++i) {
      const int64_t o = i * a.ow + (j + v) * 16;
      a.epi->store(a.y + o, a.res ? a.res + o : nullptr, k, acc[v][i], bias);
    }
  }
}

// 3x3: two output vectors at a time (2 * NR independent accumulation chains); 5x5: one, as
// its 25 weights already take most of the registers.
template <int K, int S, int NR>
void dw_rows(const DwRows& a) {
  static_assert(S == 1 || S == 2);
  constexpr int JV = K == 3 ? 2 : 1;
  __m512 w[K * K];
#pragma GCC unroll 25
  for (int i = 0; i < K * K; ++i) w[i] = _mm512_set1_ps(a.wt[i]);
  int64_t j = 0;
  for (; j + JV <= a.nvw; j += JV) dw_block<K, S, NR, JV>(a, w, j);
  if (j < a.nvw) dw_block<K, S, NR, 1>(a, w, j);
}

using DwFn = void (*)(const DwRows&);
template <int K, int S>
constexpr DwFn kDwRow[kDwRows] = {dw_rows<K, S, 1>, dw_rows<K, S, 2>, dw_rows<K, S, 3>, dw_rows<K, S, 4>};

class DirectConv final : public ConvKernel {
 public:
  DirectConv(const ConvShape& s, const float* weight, const float* bias, const Epilogue& ep, int threads);
  void run(const float* x, const float* residual, float* y, ThreadPool& pool) const override;

 private:
  void fill_band(const float* x, int64_t r0, int64_t rows, float* buf) const;
  void item(int64_t it, float* buf, const float* x, const float* res, float* y) const;

  ConvShape s_;
  VecEpilogue epi_;
  bool residual_;
  int threads_;
  const DwFn* dw_ = nullptr;  // depthwise fast path (NR = 1..4), or null
  bool col_major_ = false;    // general path: number a band's output vectors column by column
  int64_t ntaps_, nvw_, pw_, rowpitch_, eh_;
  int64_t band_h_, nbands_, nblocks_, nsplit_, cpitch_, slot_floats_;
  std::vector<float> w_, bias_;
  std::vector<int64_t> taps_;
  mutable std::vector<float> scratch_;  // one band buffer per thread
};

DirectConv::DirectConv(const ConvShape& s, const float* weight, const float* bias, const Epilogue& ep,
                       int threads)
    : s_(s), epi_(ep), residual_(ep.residual), threads_(std::max(1, threads)) {
  const int64_t cg = s.cg(), mg = s.mg(), sw = s.stride_w;
  ntaps_ = s.kh * s.kw;
  eh_ = (s.kh - 1) * s.dil_h + 1;
  nvw_ = ceil_div(s.ow, 16);
  pw_ = nvw_ * 16 + (s.kw - 1) * s.dil_w / sw;
  rowpitch_ = sw * pw_;
  for (int64_t kh = 0; kh < s.kh; ++kh)
    for (int64_t kw = 0; kw < s.kw; ++kw) {
      const int64_t col = kw * s.dil_w;
      taps_.push_back(kh * s.dil_h * rowpitch_ + (col % sw) * pw_ + col / sw);
    }

  bias_.assign(s.m, 0.f);
  if (bias) std::copy(bias, bias + s.m, bias_.begin());

  const bool dw = cg == 1 && s.kh == s.kw && (s.kh == 3 || s.kh == 5) && s.dil_h == 1 && s.dil_w == 1 &&
                  s.stride_h == s.stride_w && (s.stride_h == 1 || s.stride_h == 2);
  if (dw) {
    const bool s1 = s.stride_h == 1;
    dw_ = s.kh == 3 ? (s1 ? kDwRow<3, 1> : kDwRow<3, 2>) : (s1 ? kDwRow<5, 1> : kDwRow<5, 2>);
    w_.assign(weight, weight + s.m * ntaps_);
    nblocks_ = mg;  // one channel per block
  } else {
    // [group][block of kMR channels][c][tap][channel in block]; a block of mr channels
    // starting at channel m0 of the group begins at (g * mg + m0) * cg * ntaps.
    w_.resize(s.m * cg * ntaps_);
    nblocks_ = ceil_div(mg, kMR);
    for (int64_t g = 0; g < s.group; ++g)
      for (int64_t m0 = 0; m0 < mg; m0 += kMR) {
        const int64_t mr = std::min<int64_t>(kMR, mg - m0);
        float* dst = w_.data() + (g * mg + m0) * cg * ntaps_;
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t t = 0; t < ntaps_; ++t)
            for (int64_t i = 0; i < mr; ++i)
              dst[(c * ntaps_ + t) * mr + i] = weight[((g * mg + m0 + i) * cg + c) * ntaps_ + t];
      }
  }

  // A tile of 4 vectors along one row reads cg * eh * (64 + kw) floats; when that overflows L1,
  // tiles take 4 rows of one column instead (fewer distinct input rows per tile).
  col_major_ = cg * eh_ * (kNV * 16 * sw + (s.kw - 1) * s.dil_w) > 8 * 1024;

  // Bands: as many output rows as keep one thread's buffer near kBandFloats, but enough
  // items (about 4 per thread) to balance the threads; then split channels if still short.
  // (Stride-1 depthwise reads the input directly: no band buffer, only a zero row.)
  const bool no_buffer = dw_ && s.stride_h == 1;
  const int64_t row_floats = cg * rowpitch_;
  const int64_t budget = dw_ ? kDwBandFloats : kBandFloats;
  int64_t bh = no_buffer ? s.oh : std::clamp<int64_t>((budget / row_floats - eh_) / s.stride_h + 1, 1, s.oh);
  const int64_t target = threads_ > 1 ? 4 * threads_ : 1, outer = s.n * s.group;
  if (outer * ceil_div(s.oh, bh) < target) bh = ceil_div(s.oh, std::min(s.oh, ceil_div(target, outer)));
  if (dw_ && bh > kDwRows) bh -= bh % kDwRows;
  band_h_ = bh;
  nbands_ = ceil_div(s.oh, bh);
  nsplit_ = 1;
  if (outer * nbands_ < target) nsplit_ = std::min(nblocks_, ceil_div(target, outer * nbands_));
  cpitch_ = ((bh - 1) * s.stride_h + eh_) * rowpitch_;
  slot_floats_ = no_buffer ? s.w : cg * cpitch_;
  scratch_.assign(threads_ * slot_floats_, 0.f);
}

// Copies padded input rows [r0, r0 + rows) of the group's cg channels (x = first channel) into
// buf, each row split into stride_w phases of pw_ floats: phase p, entry j holds padded column
// j * sw + p, i.e. input column j * sw + p - pad_left (zero outside the input).
void DirectConv::fill_band(const float* x, int64_t r0, int64_t rows, float* buf) const {
  const int64_t sw = s_.stride_w, pl = s_.pad_left, w = s_.w, len = rowpitch_;
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i even = _mm512_add_epi32(iota, iota), odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i width = _mm512_set1_epi32(static_cast<int>(w));
  // Lanes l with 0 <= at + l < w.
  auto inside = [&](int64_t at) {
    const __m512i col = _mm512_add_epi32(iota, _mm512_set1_epi32(static_cast<int>(at)));
    return static_cast<__mmask16>(_mm512_cmpge_epi32_mask(col, _mm512_setzero_si512()) &
                                  _mm512_cmplt_epi32_mask(col, width));
  };
  for (int64_t c = 0; c < s_.cg(); ++c)
    for (int64_t r = 0; r < rows; ++r) {
      float* d = buf + c * cpitch_ + r * rowpitch_;
      const int64_t ih = r0 + r - s_.pad_top;
      if (sw == 1) {  // columns outside [lo, hi) are zero since the constructor and never written
        const int64_t lo = std::min(pl, len), hi = std::min(pl + w, len);
        if (ih < 0 || ih >= s_.h) {
          zero(d + lo, hi - lo);
        } else {
          copy(d + lo, x + (c * s_.h + ih) * w, hi - lo);
        }
        continue;
      }
      if (ih < 0 || ih >= s_.h) {
        zero(d, len);
        continue;
      }
      const float* src = x + (c * s_.h + ih) * w;
      if (sw == 2) {  // masked loads of 32 columns (lanes outside the row are not read), deinterleave
        const uintptr_t base = reinterpret_cast<uintptr_t>(src);
        for (int64_t j = 0; j < pw_; j += 16) {
          const int64_t at = 2 * j - pl;
          const __m512 a = _mm512_maskz_loadu_ps(inside(at), reinterpret_cast<const float*>(base + 4 * at));
          const __m512 b =
              _mm512_maskz_loadu_ps(inside(at + 16), reinterpret_cast<const float*>(base + 4 * (at + 16)));
          const __mmask16 k = lanes(pw_ - j);
          _mm512_mask_storeu_ps(d + j, k, _mm512_permutex2var_ps(a, even, b));
          _mm512_mask_storeu_ps(d + pw_ + j, k, _mm512_permutex2var_ps(a, odd, b));
        }
      } else {
        for (int64_t p = 0; p < sw; ++p)
          for (int64_t j = 0; j < pw_; ++j) {
            const int64_t col = j * sw + p - pl;
            d[p * pw_ + j] = col >= 0 && col < w ? src[col] : 0.f;
          }
      }
    }
}

void DirectConv::item(int64_t it, float* buf, const float* x, const float* res, float* y) const {
  const int64_t split = it % nsplit_;
  it /= nsplit_;
  const int64_t band = it % nbands_;
  it /= nbands_;
  const int64_t g = it % s_.group, n = it / s_.group;
  const int64_t cg = s_.cg(), mg = s_.mg(), sh = s_.stride_h, ow = s_.ow, plane = s_.oh * ow;
  const int64_t oh0 = band * band_h_, oh1 = std::min(s_.oh, oh0 + band_h_);
  if (!(dw_ && sh == 1))  // stride-1 depthwise reads the input directly
    fill_band(x + (n * s_.c + g * cg) * s_.h * s_.w, oh0 * sh, (oh1 - oh0 - 1) * sh + eh_, buf);

  const int64_t b0 = nblocks_ * split / nsplit_, b1 = nblocks_ * (split + 1) / nsplit_;
  const int64_t m_base = n * s_.m + g * mg;  // first output plane of the group
  const __mmask16 tail = lanes(ow - (nvw_ - 1) * 16);

  if (dw_) {
    const int64_t k = s_.kh, rows = (kDwRows - 1) * sh + k;
    const float* plane_in = x + (n * s_.c + g) * s_.h * s_.w;  // cg == 1: input channel g
    DwRows a{};
    a.pw = pw_;
    a.pad_left = s_.pad_left;
    a.w = s_.w;
    a.nvw = nvw_;
    a.tail = tail;
    a.ow = ow;
    a.epi = &epi_;
    for (int64_t oh = oh0; oh < oh1; oh += kDwRows) {
      for (int64_t r = 0; r < rows; ++r) {
        if (sh == 1) {  // stride 1 reads the input itself; buf is a zero row
          const int64_t ih = oh - s_.pad_top + r;
          a.rows[r] = ih >= 0 && ih < s_.h ? plane_in + ih * s_.w : buf;
        } else {  // rows past the band are never read
          a.rows[r] = buf + std::min((oh - oh0) * sh + r, cpitch_ / rowpitch_ - 1) * rowpitch_;
        }
      }
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t m = g * mg + b;
        a.wt = w_.data() + m * ntaps_;
        a.bias = bias_[m];
        a.y = y + (m_base + b) * plane + oh * ow;
        a.res = res ? res + (m_base + b) * plane + oh * ow : nullptr;
        dw_[std::min<int64_t>(kDwRows, oh1 - oh) - 1](a);
      }
    }
    return;
  }

  Tile a{};
  a.x = buf;
  a.cg = cg;
  a.cpitch = cpitch_;
  a.ntaps = ntaps_;
  a.taps = taps_.data();
  a.plane = plane;
  a.epi = &epi_;
  const int64_t nv_total = (oh1 - oh0) * nvw_;
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t m0 = b * kMR, mr = std::min<int64_t>(kMR, mg - m0);
    a.w = w_.data() + (g * mg + m0) * cg * ntaps_;
    a.y = y + (m_base + m0) * plane;
    a.res = res ? res + (m_base + m0) * plane : nullptr;
    a.bias = bias_.data() + g * mg + m0;
    for (int64_t k0 = 0; k0 < nv_total; k0 += kNV) {
      const int64_t nv = std::min<int64_t>(kNV, nv_total - k0);
      for (int64_t v = 0; v < nv; ++v) {
        const int64_t k = k0 + v;
        const int64_t r = col_major_ ? k % (oh1 - oh0) : k / nvw_;
        const int64_t j = col_major_ ? k / (oh1 - oh0) : k % nvw_;
        a.xo[v] = r * sh * rowpitch_ + j * 16;
        a.yo[v] = (oh0 + r) * ow + j * 16;
        a.mask[v] = j == nvw_ - 1 ? tail : static_cast<__mmask16>(0xFFFF);
      }
      kTiles[mr - 1][nv - 1](a);
    }
  }
}

void DirectConv::run(const float* x, const float* residual, float* y, ThreadPool& pool) const {
  const int64_t items = s_.n * s_.group * nbands_ * nsplit_;
  const float* res = residual_ ? residual : nullptr;
  for_each_item(pool, threads_, items, [&](int64_t slot, int64_t it) {
    item(it, scratch_.data() + slot * slot_floats_, x, res, y);
  });
}

}  // namespace

std::string direct_supports(const ConvShape&) { return ""; }

std::unique_ptr<ConvKernel> make_direct_conv(const ConvShape& s, const float* weight, const float* bias,
                                             const Epilogue& ep, int threads) {
  return std::make_unique<DirectConv>(s, weight, bias, ep, threads);
}

}  // namespace joule::kernels
