// The "simd" algorithm of the pool op class: float32 2-D MaxPool and AveragePool (pads,
// strides, ceil_mode, count_include_pad; MaxPool without dilations or Indices), GlobalAveragePool,
// GlobalMaxPool, ReduceMean over H,W of N,C,H,W (axes 2,3) or of N,H,W,C (axes 1,2: what
// the channels_last pass makes of a squeeze-and-excitation GlobalAveragePool), and joule's
// N,H,W,C MaxPool/AveragePool (channels_last). MaxPool also takes int8/uint8 codes (N,C,H,W or
// N,H,W,C: lower_int8 moves a QuantizeLinear above it).
// N,C,H,W windows are separable: each output row first reduces its window's input rows into a
// padded row buffer (vectorised along W, masked tails), then each output takes the reduction of
// kw buffer cells (vectorised along the output row). N,H,W,C reductions run along C, or
// separable along the W*C row when a pixel holds few channels. Max propagates NaN
// (as ONNX Runtime and PyTorch); -inf pads. Averages divide by the window's cells inside the
// input (or the padded input, count_include_pad). Planes or channel ranges split over threads.
// (GCC 12 warns about _mm512_undefined_* inside its own intrinsics headers.)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <limits>
#include <type_traits>
#include <vector>

#include "joule/core/cpu_features.h"
#include "joule/core/error.h"
#include "joule/kernels/eltwise/eltwise.h"
#include "joule/ops/pool_util.h"
#include "joule/ops/vec_math.h"

namespace joule::kernels {
namespace {

enum class Kind { kMaxPool, kAvgPool, kGlobalAvg, kGlobalMax, kMeanNhwc, kMaxNhwc, kAvgNhwc };

// ---- the vectorised loops, compiled three times (baseline, AVX2 and AVX-512)

template <class T>
JOULE_ALWAYS_INLINE T vmax_t(T m, T v) { return v > m || v != v ? v : m; }

// acc[i] += x[i] (the global and N,H,W,C means)
JOULE_ALWAYS_INLINE void add_body(float* acc, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
}
void add_base(float* acc, const float* x, int64_t n) { add_body(acc, x, n); }
JOULE_AVX512 void add_avx512(float* acc, const float* x, int64_t n) { add_body(acc, x, n); }
JOULE_AVX2 void add_avx2(float* acc, const float* x, int64_t n) { add_body(acc, x, n); }
using Add = void (*)(float*, const float*, int64_t);
Add add_of() { return cpu_features().avx512 ? add_avx512 : cpu_features().avx2_fma ? add_avx2 : add_base; }

// Output columns [j0, j1) of one output row whose windows lie inside the input row: acc[j] =
// the max (or sum) over the kernel rows `rows` and kernel columns b of rows[a][j*S + b - pad].
// Loops run kernel row, kernel column, then output column, so the inner loop vectorises along
// the output row (S: the stride, 1, 2 or 0 for any).
template <class T, bool Max, int S>
JOULE_ALWAYS_INLINE void rows_body(const T* const* rows, int64_t nrows, int64_t kw, int64_t s, int64_t pad, T* acc,
                                   int64_t j0, int64_t j1) {
  const int64_t st = S ? S : s;
  for (int64_t a = 0; a < nrows; ++a)
    for (int64_t b = 0; b < kw; ++b) {
      const T* r = rows[a] + b - pad;  // r[j * st] is in the row for the columns given
      if (a == 0 && b == 0) {
        for (int64_t j = j0; j < j1; ++j) acc[j] = r[j * st];
      } else {
        for (int64_t j = j0; j < j1; ++j) acc[j] = Max ? vmax_t(acc[j], r[j * st]) : acc[j] + r[j * st];
      }
    }
}
template <class T, bool Max, int S>
void rows_base(const T* const* rows, int64_t nrows, int64_t kw, int64_t s, int64_t pad, T* acc, int64_t j0, int64_t j1) {
  rows_body<T, Max, S>(rows, nrows, kw, s, pad, acc, j0, j1);
}
template <class T, bool Max, int S>
JOULE_AVX512 void rows_avx512(const T* const* rows, int64_t nrows, int64_t kw, int64_t s, int64_t pad, T* acc, int64_t j0,
                              int64_t j1) {
  rows_body<T, Max, S>(rows, nrows, kw, s, pad, acc, j0, j1);
}
template <class T, bool Max, int S>
JOULE_AVX2 void rows_avx2(const T* const* rows, int64_t nrows, int64_t kw, int64_t s, int64_t pad, T* acc, int64_t j0,
                          int64_t j1) {
  rows_body<T, Max, S>(rows, nrows, kw, s, pad, acc, j0, j1);
}
// The same for float32 at stride 1 or 2 in AVX-512 registers: 16 outputs stay in one register
// over all kernel cells (stride 2: two loads and a permute to the even lanes); lanes that saw a
// NaN are set to NaN at the end; the row's tail runs masked.
template <bool Max, int S>
JOULE_AVX512 void rows_avx512_float(const float* const* rows, int64_t nrows, int64_t kw, int64_t, int64_t pad, float* acc,
                                    int64_t j0, int64_t j1) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  for (int64_t j = j0; j < j1; j += 16) {
    const int64_t n = std::min<int64_t>(16, j1 - j);
    const __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
    __m512 v = _mm512_setzero_ps();
    __mmask16 nan = 0;  // lanes that have seen a NaN (MAXPS alone would drop it)
    for (int64_t a = 0; a < nrows; ++a)
      for (int64_t b = 0; b < kw; ++b) {
        const float* r = rows[a] + b - pad + j * S;
        __m512 x;
        if constexpr (S == 1) {
          x = _mm512_maskz_loadu_ps(m, r);
        } else {  // the 2n - 1 floats r[0], r[2], ..., r[2n - 2]
          const int64_t c = 2 * n - 1;
          const __mmask16 lo = static_cast<__mmask16>(c >= 16 ? 0xffff : (1u << c) - 1);
          const __mmask16 hi = static_cast<__mmask16>(c > 16 ? (1u << (c - 16)) - 1 : 0);
          x = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(lo, r), even, _mm512_maskz_loadu_ps(hi, r + 16));
        }
        if (Max) nan |= _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
        if (a == 0 && b == 0) v = x;
        else v = Max ? _mm512_max_ps(v, x) : _mm512_add_ps(v, x);
      }
    if (Max) v = _mm512_mask_mov_ps(v, nan, _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
    _mm512_mask_storeu_ps(acc + j, m, v);
  }
}

// buf[i] = the fold (max, NaN winning, or sum) of rows[a][i] over the kernel rows, i < n: the
// vertical step of the separable N,C,H,W windows.
template <class T, bool Max>
JOULE_ALWAYS_INLINE void vfold_body(const T* const* rows, int64_t nrows, T* buf, int64_t n) {
  for (int64_t i = 0; i < n; ++i) buf[i] = rows[0][i];
  for (int64_t a = 1; a < nrows; ++a) {
    const T* r = rows[a];
    for (int64_t i = 0; i < n; ++i) buf[i] = Max ? vmax_t(buf[i], r[i]) : buf[i] + r[i];
  }
}
template <class T, bool Max>
void vfold_base(const T* const* rows, int64_t nrows, T* buf, int64_t n) { vfold_body<T, Max>(rows, nrows, buf, n); }
template <class T, bool Max>
JOULE_AVX512 void vfold_avx512(const T* const* rows, int64_t nrows, T* buf, int64_t n) { vfold_body<T, Max>(rows, nrows, buf, n); }
template <class T, bool Max>
JOULE_AVX2 void vfold_avx2(const T* const* rows, int64_t nrows, T* buf, int64_t n) { vfold_body<T, Max>(rows, nrows, buf, n); }
// The same in AVX-512 registers with masked tails (rows of 7 to 28 floats are common: a plain
// loop would run them scalar): float32 max (NaN lanes kept) or sum, and 8-bit codes' max.
template <bool Max>
JOULE_AVX512 void vfold_avx512_float(const float* const* rows, int64_t nrows, float* buf, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const int64_t k = std::min<int64_t>(16, n - i);
    const __mmask16 m = static_cast<__mmask16>((1u << k) - 1);
    __m512 v = _mm512_maskz_loadu_ps(m, rows[0] + i);
    __mmask16 nan = Max ? _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) : 0;
    for (int64_t a = 1; a < nrows; ++a) {
      const __m512 x = _mm512_maskz_loadu_ps(m, rows[a] + i);
      if constexpr (Max) {
        nan |= _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
        v = _mm512_max_ps(v, x);
      } else {
        v = _mm512_add_ps(v, x);
      }
    }
    if (Max) v = _mm512_mask_mov_ps(v, nan, _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
    _mm512_mask_storeu_ps(buf + i, m, v);
  }
}
template <class T>
JOULE_AVX512 void vfold_avx512_codes(const T* const* rows, int64_t nrows, T* buf, int64_t n) {
  for (int64_t i = 0; i < n; i += 64) {
    const int64_t k = std::min<int64_t>(64, n - i);
    const __mmask64 m = k == 64 ? ~0ull : (1ull << k) - 1;
    __m512i v = _mm512_maskz_loadu_epi8(m, rows[0] + i);
    for (int64_t a = 1; a < nrows; ++a) {
      const __m512i x = _mm512_maskz_loadu_epi8(m, rows[a] + i);
      v = std::is_same_v<T, uint8_t> ? _mm512_max_epu8(v, x) : _mm512_max_epi8(v, x);
    }
    _mm512_mask_storeu_epi8(buf + i, m, v);
  }
}
// The two float32 loops in AVX2 registers (8 lanes; CPUs without AVX-512 ran the plain loops,
// which GCC vectorises with scalar prologues and tails: rows of 7 to 28 floats then ran mostly
// scalar). Tails load masked; NaN lanes kept as above.
JOULE_AVX2 inline __m256i lanes_below(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
// Plain loads for whole vectors (a masked load costs more on AMD's cores), masked for tails.
JOULE_AVX2 inline __m256 load_lanes(const float* p, int64_t n, __m256i m) {
  return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m);
}
JOULE_AVX2 inline void store_lanes(float* p, __m256 v, int64_t n, __m256i m) {
  if (n == 8)
    _mm256_storeu_ps(p, v);
  else
    _mm256_maskstore_ps(p, m, v);
}
template <bool Max>
JOULE_AVX2 void vfold_avx2_float(const float* const* rows, int64_t nrows, float* buf, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) {
    const int64_t k = std::min<int64_t>(8, n - i);
    const __m256i m = lanes_below(k);
    __m256 v = load_lanes(rows[0] + i, k, m);
    __m256 nan = Max ? _mm256_cmp_ps(v, v, _CMP_UNORD_Q) : _mm256_setzero_ps();
    for (int64_t a = 1; a < nrows; ++a) {
      const __m256 x = load_lanes(rows[a] + i, k, m);
      if constexpr (Max) {
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
        v = _mm256_max_ps(v, x);
      } else {
        v = _mm256_add_ps(v, x);
      }
    }
    if (Max) v = _mm256_blendv_ps(v, _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()), nan);
    store_lanes(buf + i, v, k, m);
  }
}
template <bool Max, int S>
JOULE_AVX2 void rows_avx2_float(const float* const* rows, int64_t nrows, int64_t kw, int64_t, int64_t pad, float* acc,
                                int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; j += 8) {
    const int64_t n = std::min<int64_t>(8, j1 - j);
    const __m256i m = lanes_below(n);
    __m256 v = _mm256_setzero_ps(), nan = _mm256_setzero_ps();
    for (int64_t a = 0; a < nrows; ++a)
      for (int64_t b = 0; b < kw; ++b) {
        const float* r = rows[a] + b - pad + j * S;
        __m256 x;
        if constexpr (S == 1) {
          x = load_lanes(r, n, m);
        } else {  // the 2n - 1 floats r[0], r[2], ..., r[2n - 2], to the even lanes
          const int64_t c = 2 * n - 1;
          const __m256 lo = load_lanes(r, c, lanes_below(c));
          const __m256 hi = _mm256_maskload_ps(r + 8, lanes_below(c - 8));  // c <= 15
          const __m256 t = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));  // lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6
          x = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
        }
        if (Max) nan = _mm256_or_ps(nan, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
        if (a == 0 && b == 0)
          v = x;
        else
          v = Max ? _mm256_max_ps(v, x) : _mm256_add_ps(v, x);
      }
    if (Max) v = _mm256_blendv_ps(v, _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()), nan);
    store_lanes(acc + j, v, n, m);
  }
}

template <class T>
using VFold = void (*)(const T* const*, int64_t, T*, int64_t);
template <class T, bool Max>
VFold<T> vfold_of() {
  if (!cpu_features().avx512) {
    if constexpr (std::is_same_v<T, float>)
      if (cpu_features().avx2_fma) return vfold_avx2_float<Max>;
    return cpu_features().avx2_fma ? vfold_avx2<T, Max> : vfold_base<T, Max>;
  }
  if constexpr (std::is_same_v<T, float>) return vfold_avx512_float<Max>;
  else if constexpr (Max) return vfold_avx512_codes<T>;
  else return vfold_avx512<T, Max>;
}

template <class T>
using Rows = void (*)(const T* const*, int64_t, int64_t, int64_t, int64_t, T*, int64_t, int64_t);
template <class T, bool Max>
Rows<T> rows_of(int64_t stride) {
  const bool v = cpu_features().avx512;
  if constexpr (std::is_same_v<T, float>)
    if (v && (stride == 1 || stride == 2)) return stride == 1 ? rows_avx512_float<Max, 1> : rows_avx512_float<Max, 2>;
  const bool v2 = cpu_features().avx2_fma;
  if constexpr (std::is_same_v<T, float>)
    if (!v && v2 && (stride == 1 || stride == 2)) return stride == 1 ? rows_avx2_float<Max, 1> : rows_avx2_float<Max, 2>;
  if (stride == 1) return v ? rows_avx512<T, Max, 1> : v2 ? rows_avx2<T, Max, 1> : rows_base<T, Max, 1>;
  if (stride == 2) return v ? rows_avx512<T, Max, 2> : v2 ? rows_avx2<T, Max, 2> : rows_base<T, Max, 2>;
  return v ? rows_avx512<T, Max, 0> : v2 ? rows_avx2<T, Max, 0> : rows_base<T, Max, 0>;
}

// One output row of an N,H,W,C window pool (T: float32, or 8-bit codes for Max): output column
// j folds the cells of kernel rows [a0, a1) and the columns of its window inside the input.
struct NhwcWindow {
  int64_t h, w, c, ow, h0, a0, a1, kw, sw, pl;
};
template <class T, bool Max>
JOULE_ALWAYS_INLINE void nhwc_row_body(const T* xb, T* y, const NhwcWindow& q, const float* scale, T none) {
  const int64_t c = q.c;
  for (int64_t j = 0; j < q.ow; ++j) {
    const int64_t w0 = j * q.sw - q.pl, b0 = std::max<int64_t>(0, -w0), b1 = std::min(q.kw, q.w - w0);
    T* acc = y + j * c;
    if (q.a0 >= q.a1 || b0 >= b1) {  // no cell inside the input
      for (int64_t k = 0; k < c; ++k) acc[k] = Max ? none : T(0);
      continue;
    }
    const T* first = xb + ((q.h0 + q.a0) * q.w + w0 + b0) * c;
    for (int64_t k = 0; k < c; ++k) acc[k] = first[k];
    for (int64_t a = q.a0; a < q.a1; ++a)
      for (int64_t e = a == q.a0 ? b0 + 1 : b0; e < b1; ++e) {
        const T* p = xb + ((q.h0 + a) * q.w + w0 + e) * c;
        for (int64_t k = 0; k < c; ++k) acc[k] = Max ? vmax_t(acc[k], p[k]) : acc[k] + p[k];
      }
    if constexpr (!Max) {
      const float s = scale[j];
      for (int64_t k = 0; k < c; ++k) acc[k] *= s;
    }
  }
}
// The same row, separable, for few channels (a pixel's C values shorter than a few vectors: a
// per-pixel fold would run mostly in vector tails): the kernel rows folded into a padded row
// buffer `buf` (W*C contiguous values: whole vectors whatever C is), the kernel columns folded at
// stride 1 over it into `full` (contiguous again), then every sw-th pixel's C values copied out
// (averages scaled). Padding is `none` (max) or 0 (sums), which the windows then ignore as the
// clipped loop does.
template <class T, bool Max>
JOULE_ALWAYS_INLINE void nhwc_row_sep_body(const T* xb, T* y, const NhwcWindow& q, const float* scale, T none, T* buf,
                                           T* full) {
  const int64_t c = q.c, span = (q.ow - 1) * q.sw + q.kw;  // padded columns the windows cover
  const T pad = Max ? none : T(0);
  const int64_t lo = std::min(q.pl, span), hi = std::max(lo, std::min(span, q.pl + q.w));  // columns from the input
  for (int64_t i = 0; i < lo * c; ++i) buf[i] = pad;
  for (int64_t i = hi * c; i < span * c; ++i) buf[i] = pad;
  T* b = buf + lo * c;
  const int64_t n = (hi - lo) * c;
  if (q.a0 >= q.a1) {
    for (int64_t i = 0; i < n; ++i) b[i] = pad;
  } else {
    const T* first = xb + ((q.h0 + q.a0) * q.w + lo - q.pl) * c;
    for (int64_t i = 0; i < n; ++i) b[i] = first[i];
    for (int64_t a = q.a0 + 1; a < q.a1; ++a) {
      const T* r = xb + ((q.h0 + a) * q.w + lo - q.pl) * c;
      for (int64_t i = 0; i < n; ++i) b[i] = Max ? vmax_t(b[i], r[i]) : b[i] + r[i];
    }
  }
  const int64_t m = ((q.ow - 1) * q.sw + 1) * c;
  for (int64_t i = 0; i < m; ++i) full[i] = buf[i];
  for (int64_t e = 1; e < q.kw; ++e) {
    const T* r = buf + e * c;
    for (int64_t i = 0; i < m; ++i) full[i] = Max ? vmax_t(full[i], r[i]) : full[i] + r[i];
  }
  for (int64_t j = 0; j < q.ow; ++j) {
    const T* f = full + j * q.sw * c;
    T* o = y + j * c;
    if constexpr (Max) {
      for (int64_t k = 0; k < c; ++k) o[k] = f[k];
    } else {
      const float sc = scale[j];
      for (int64_t k = 0; k < c; ++k) o[k] = f[k] * sc;
    }
  }
}

// Below this many bytes per pixel a row runs separable (nhwc_row_sep_body).
constexpr int64_t kSeparableBelowBytes = 256;

template <class T, bool Max>
JOULE_ALWAYS_INLINE void nhwc_row_pick(const T* xb, T* y, const NhwcWindow& q, const float* scale, T none) {
  if (q.c * static_cast<int64_t>(sizeof(T)) >= kSeparableBelowBytes) return nhwc_row_body<T, Max>(xb, y, q, scale, none);
  thread_local std::vector<T> buf, full;
  const size_t need = static_cast<size_t>(((q.ow - 1) * q.sw + q.kw) * q.c);
  if (buf.size() < need) buf.resize(need), full.resize(need);  // grows once per thread and shape
  nhwc_row_sep_body<T, Max>(xb, y, q, scale, none, buf.data(), full.data());
}
template <class T, bool Max>
void nhwc_row_base(const T* xb, T* y, const NhwcWindow& q, const float* scale, T none) {
  nhwc_row_pick<T, Max>(xb, y, q, scale, none);
}
template <class T, bool Max>
JOULE_AVX512 void nhwc_row_avx512(const T* xb, T* y, const NhwcWindow& q, const float* scale, T none) {
  nhwc_row_pick<T, Max>(xb, y, q, scale, none);
}
template <class T, bool Max>
JOULE_AVX2 void nhwc_row_avx2(const T* xb, T* y, const NhwcWindow& q, const float* scale, T none) {
  nhwc_row_pick<T, Max>(xb, y, q, scale, none);
}
template <class T>
using NhwcRow = void (*)(const T*, T*, const NhwcWindow&, const float*, T);
template <class T, bool Max>
NhwcRow<T> nhwc_row_of() {
  if constexpr (!Max && !std::is_same_v<T, float>) return nullptr;  // (averages of codes: never planned)
  else return cpu_features().avx512 ? nhwc_row_avx512<T, Max> : cpu_features().avx2_fma ? nhwc_row_avx2<T, Max> : nhwc_row_base<T, Max>;
}

// ---- plans

struct Plan {
  Kind kind = Kind::kMaxPool;
  DType dtype = DType::Float32;
  Shape x_shape, y_shape;
  // windowed pools (N,C,H,W): SpatialPlan's H and W (index 1 and 2)
  int64_t h = 0, w = 0, oh = 0, ow = 0, kh = 1, kw = 1, sh = 1, sw = 1, pt = 0, pl = 0;
  std::vector<float> scale;       // per output: 1 / the window's cells (average)
};

int64_t cells(int64_t start, int64_t k, int64_t lo, int64_t hi) {  // of [start, start + k) inside [lo, hi)
  return std::max<int64_t>(0, std::min(start + k, hi) - std::max(start, lo));
}

std::string read_axes(const NodeView& v, std::vector<int64_t>* axes) {
  if (v.node.has_attr("axes")) {
    *axes = v.node.attr_ints("axes");
  } else if (v.has(1)) {
    const Tensor* t = v.constant(1);
    if (!t || t->dtype() != DType::Int64) return "axes are not a constant";
    axes->assign(t->data<int64_t>(), t->data<int64_t>() + t->numel());
  } else {
    return "no axes (a reduction over every axis)";
  }
  for (int64_t& a : *axes) a = a < 0 ? a + 4 : a;
  std::sort(axes->begin(), axes->end());
  return "";
}

// "" and the plan when supported, else the reason.
std::string plan_of(const NodeView& v, Plan* p) {
  const ir::Node& n = v.node;
  // joule's MaxPool/AveragePool: the ONNX op on N,H,W,C (the channels_last pass)
  const bool nhwc = n.domain == "joule" && (n.op_type == "MaxPool" || n.op_type == "AveragePool");
  if (nhwc && n.attr_int("channels_last", 0) != 1) return "a joule pool without channels_last";
  if (!nhwc && !n.domain.empty() && n.domain != "ai.onnx") return "not an ONNX op";
  if (!v.has(0)) return "no input";
  p->dtype = v.in_types[0]->dtype;
  const bool codes = (p->dtype == DType::UInt8 || p->dtype == DType::Int8) && n.op_type == "MaxPool";
  if (p->dtype != DType::Float32 && !codes) return "input is not float32 (nor the int8/uint8 codes of a MaxPool)";
  if (!v.static_shape(0, &p->x_shape) || p->x_shape.size() != 4) return "input is not a static rank-4 tensor";
  if (v.out_types.empty() || !v.out_types[0] || !v.out_types[0]->is_static()) return "output shape not static";
  if (n.outputs.size() > 1 && !n.outputs[1].empty()) return "MaxPool's Indices output";
  p->y_shape = v.out_types[0]->static_shape();
  const std::string& t = n.op_type;
  if (t == "GlobalAveragePool" || t == "GlobalMaxPool") {
    p->kind = t == "GlobalMaxPool" ? Kind::kGlobalMax : Kind::kGlobalAvg;
    return "";
  }
  if (t == "ReduceMean") {
    std::vector<int64_t> axes;
    if (std::string r = read_axes(v, &axes); !r.empty()) return r;
    if (axes == std::vector<int64_t>{2, 3}) p->kind = Kind::kGlobalAvg;
    else if (axes == std::vector<int64_t>{1, 2}) p->kind = Kind::kMeanNhwc;
    else return "axes other than {2, 3} or {1, 2} of a rank-4 tensor";
    return "";
  }
  if (t != "MaxPool" && t != "AveragePool") return "not a pooling op";
  p->kind = t == "MaxPool" ? (nhwc ? Kind::kMaxNhwc : Kind::kMaxPool) : (nhwc ? Kind::kAvgNhwc : Kind::kAvgPool);
  const Shape hw = nhwc ? Shape{p->x_shape[1], p->x_shape[2]} : Shape{p->x_shape[2], p->x_shape[3]};
  ops::ConvGeometry g;
  ops::SpatialPlan sp;
  try {
    g = ops::read_pool_geometry(n, 2, true);
    sp = ops::make_spatial_plan(g, n, hw);
  } catch (const Error& e) {
    return e.what();
  }
  if (sp.d[1] != 1 || sp.d[2] != 1) return "dilations";
  p->h = sp.in[1], p->w = sp.in[2], p->oh = sp.out[1], p->ow = sp.out[2], p->kh = sp.k[1], p->kw = sp.k[2];
  p->sh = sp.s[1], p->sw = sp.s[2], p->pt = sp.pb[1], p->pl = sp.pb[2];
  if (p->kh > 64) return "a kernel taller than 64 rows";
  if (p->kind == Kind::kAvgPool || p->kind == Kind::kAvgNhwc) {
    const bool pad = n.attr_int("count_include_pad", 0) != 0;
    for (int64_t r = 0; r < p->oh; ++r)
      for (int64_t c = 0; c < p->ow; ++c) {
        const int64_t top = r * p->sh - p->pt, left = c * p->sw - p->pl;
        const int64_t n = pad ? cells(top, p->kh, -p->pt, p->h + sp.pe[1]) * cells(left, p->kw, -p->pl, p->w + sp.pe[2])
                              : cells(top, p->kh, 0, p->h) * cells(left, p->kw, 0, p->w);
        p->scale.push_back(1.f / static_cast<float>(n));
      }
  }
  return "";
}

class PoolKernel final : public Kernel {
 public:
  explicit PoolKernel(Plan p) : p_(std::move(p)) {}

  void run(ops::KernelContext& k) const override {
    const Tensor& X = k.in(0);
    if (X.dtype() != p_.dtype || X.shape() != p_.x_shape)
      fail(k.node.where() + ": the simd kernel was prepared for another shape or dtype, got " + X.describe());
    Tensor& Y = k.output(0, p_.dtype, p_.y_shape);
    const int64_t n = p_.x_shape[0], c = p_.x_shape[1];
    const bool nhwc = p_.kind == Kind::kMaxNhwc;
    if (p_.dtype == DType::UInt8)
      return nhwc ? windows_nhwc<uint8_t, true>(X.data<uint8_t>(), Y.data<uint8_t>(), k.pool)
                  : windows<uint8_t, true>(X.data<uint8_t>(), Y.data<uint8_t>(), n * c, k.pool);
    if (p_.dtype == DType::Int8)
      return nhwc ? windows_nhwc<int8_t, true>(X.data<int8_t>(), Y.data<int8_t>(), k.pool)
                  : windows<int8_t, true>(X.data<int8_t>(), Y.data<int8_t>(), n * c, k.pool);
    const float* x = X.data<float>();
    float* y = Y.data<float>();
    switch (p_.kind) {
      case Kind::kMaxPool: return windows<float, true>(x, y, n * c, k.pool);
      case Kind::kAvgPool: return windows<float, false>(x, y, n * c, k.pool);
      case Kind::kGlobalAvg:
      case Kind::kGlobalMax: return planes(x, y, n * c, p_.x_shape[2] * p_.x_shape[3], k.pool);
      case Kind::kMeanNhwc: return mean_nhwc(x, y, k.pool);
      case Kind::kMaxNhwc: return windows_nhwc<float, true>(x, y, k.pool);
      case Kind::kAvgNhwc: return windows_nhwc<float, false>(x, y, k.pool);
    }
  }

 private:
  // Per plane, per output row, separable: the kernel rows (clipped to the input) folded into a
  // padded row buffer (vectorised along W), then each output the fold of kw buffer cells
  // (vectorised along the output row, rows_of), so edges need no scalar loop; pads are -inf /
  // the lowest code (max) or 0 (sums); averages then scaled by 1 / cells.
  template <class T, bool Max>
  void windows(const T* x, T* y, int64_t planes, ThreadPool* pool) const {
    const int64_t h = p_.h, w = p_.w, oh = p_.oh, ow = p_.ow, kh = p_.kh, kw = p_.kw, sw = p_.sw, pl = p_.pl;
    const int64_t span = (ow - 1) * sw + kw;  // buffer cells: input column i - pl at index i
    const int64_t lo = std::min(pl, span), hi = std::max(lo, std::min(span, pl + w));
    const int64_t col0 = hi > lo ? lo - pl : 0;  // the input column at buffer index lo
    const Rows<T> rows_fn = rows_of<T, Max>(sw);
    const VFold<T> vfold = vfold_of<T, Max>();
    const T none = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
    const T pad = Max ? none : T(0);
    split_items(pool, planes, h * w, [&](int64_t first, int64_t last_plane) {
      thread_local std::vector<T> buf;
      if (buf.size() < static_cast<size_t>(span)) buf.resize(static_cast<size_t>(span));  // grows once per thread and shape
      T* b = buf.data();
      for (int64_t i = 0; i < lo; ++i) b[i] = pad;
      for (int64_t i = hi; i < span; ++i) b[i] = pad;
      const T* const brow[1] = {b};
      const T* rows[64];
      for (int64_t t = first; t < last_plane; ++t) {
        const T* xp = x + t * h * w;
        T* yp = y + t * oh * ow;
        for (int64_t i = 0; i < oh; ++i) {
          const int64_t h0 = i * p_.sh - p_.pt;
          const int64_t a0 = std::max<int64_t>(0, -h0), a1 = std::min(kh, h - h0);
          int64_t nrows = 0;
          for (int64_t a = a0; a < a1; ++a) rows[nrows++] = xp + (h0 + a) * w + col0;
          T* yr = yp + i * ow;
          if (nrows == 0) {  // no input row in the window: -inf / the lowest code, or 0
            for (int64_t j = 0; j < ow; ++j) yr[j] = pad;
            continue;
          }
          vfold(rows, nrows, b + lo, hi - lo);
          rows_fn(brow, 1, kw, sw, 0, yr, 0, ow);
          if constexpr (!Max) {
            const float* sc = p_.scale.data() + i * ow;
            for (int64_t j = 0; j < ow; ++j) yr[j] *= sc[j];
          }
        }
      }
    });
  }

  void planes(const float* x, float* y, int64_t planes, int64_t hw, ThreadPool* pool) const {
    const bool max = p_.kind == Kind::kGlobalMax;
    split_items(pool, planes, hw, [&](int64_t first, int64_t last) {
      for (int64_t t = first; t < last; ++t) y[t] = max ? plane_max(x + t * hw, hw) : plane_sum(x + t * hw, hw) / static_cast<float>(hw);
    });
  }
  static float plane_sum(const float* x, int64_t n) {
    float acc[16] = {};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
      for (int j = 0; j < 16; ++j) acc[j] += x[i + j];
    float s = 0;
    for (; i < n; ++i) s += x[i];
    for (float a : acc) s += a;
    return s;
  }
  static float plane_max(const float* x, int64_t n) {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < n; ++i) m = vmax_t(m, x[i]);
    return m;
  }

  // N,H,W,C windows: each output pixel's C values start from the window's first cell inside
  // the input and fold in the others along C (vectorised, in nhwc_row: one call per output row,
  // so a few channels — ShuffleNet's 24 — pay no call per cell); averages then scaled. Output
  // rows split over threads. T: float32, or the 8-bit codes of a MaxPool.
  template <class T, bool Max>
  void windows_nhwc(const T* x, T* y, ThreadPool* pool) const {
    const int64_t n = p_.x_shape[0], c = p_.x_shape[3], h = p_.h, w = p_.w, oh = p_.oh, ow = p_.ow;
    const NhwcRow<T> row = nhwc_row_of<T, Max>();
    const T none = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
    split_items(pool, n * oh, ow * p_.kh * p_.kw * c, [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) {
        const int64_t b = r / oh, i = r % oh;
        const int64_t h0 = i * p_.sh - p_.pt;
        const NhwcWindow win{h, w, c, ow, h0, std::max<int64_t>(0, -h0), std::min(p_.kh, h - h0), p_.kw, p_.sw, p_.pl};
        row(x + b * h * w * c, y + r * ow * c, win, Max ? nullptr : p_.scale.data() + i * ow, none);
      }
    });
  }

  // y[n, c] = mean over H,W of x[n, h, w, c]: rows of C folded; channel ranges over threads.
  void mean_nhwc(const float* x, float* y, ThreadPool* pool) const {
    const int64_t n = p_.x_shape[0], hw = p_.x_shape[1] * p_.x_shape[2], c = p_.x_shape[3];
    const Add add = add_of();
    const float inv = 1.f / static_cast<float>(hw);
    for (int64_t b = 0; b < n; ++b) {
      const float* xb = x + b * hw * c;
      float* yb = y + b * c;
      const int64_t blocks = (c + 15) / 16;
      split_items(pool, blocks, hw * 16, [&](int64_t first, int64_t last) {
        const int64_t c0 = first * 16, c1 = std::min(c, last * 16);
        std::fill(yb + c0, yb + c1, 0.f);
        for (int64_t i = 0; i < hw; ++i) add(yb + c0, xb + i * c + c0, c1 - c0);
        for (int64_t j = c0; j < c1; ++j) yb[j] *= inv;
      });
    }
  }

  Plan p_;
};

std::string supports(const NodeView& v) {
  Plan p;
  return plan_of(v, &p);
}

double estimate_ms(const NodeView& v) { return static_cast<double>(planned_numel(v, 0)) * 1e-6; }

std::unique_ptr<Kernel> prepare(const NodeView& v) {
  Plan p;
  plan_of(v, &p);
  return std::make_unique<PoolKernel>(std::move(p));
}

}  // namespace

bool is_pool(const ir::Node& n) {
  if (n.domain == "joule") return n.op_type == "MaxPool" || n.op_type == "AveragePool";
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  return n.op_type == "MaxPool" || n.op_type == "AveragePool" || n.op_type == "GlobalAveragePool" ||
         n.op_type == "GlobalMaxPool" || n.op_type == "ReduceMean";
}

extern const Algorithm kPoolSimd;
const Algorithm kPoolSimd{"pool", "simd",
                          "float32 2-D Max/AveragePool (separable windows; N,C,H,W or N,H,W,C; MaxPool of 8-bit codes too), global pools and ReduceMean over H,W, vectorised, threaded",
                          supports, estimate_ms, prepare};

}  // namespace joule::kernels
