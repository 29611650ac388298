// The integer plan's epilogue over float accumulators (kernels/int8/requant.h), compiled three
// times (baseline, AVX2, AVX-512; chosen by core/cpu_features) with -ffp-contract=off: GCC
// vectorises the loops of ops::qint::Requant::activated without fusing any multiply and add, so
// every build gives the reference kernel's values bit for bit. SiLU runs there as three passes
// over a chunk in L1: the scaled value, ops::qint::silu's exact sequence with intrinsics (8 lanes;
// the same operations in the same order as the scalar form, so the same bits), the output. The
// AVX-512 form is intrinsics throughout, 16 channels at a time, with the same operations.
#include "joule/kernels/int8/requant.h"

#include <immintrin.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "joule/core/cpu_features.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 on the intrinsics' _mm512_undefined_ps
#endif

namespace joule::kernels {
namespace {

namespace qint = ops::qint;
namespace vec = ops::vec;

// x[i] = qint::silu(x[i]) for i < n.
void silu_scalar(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = qint::silu(x[i]);
}

JOULE_AVX512 JOULE_ALWAYS_INLINE __m512 silu16(__m512 v) {
  __m512 t = _mm512_or_ps(v, _mm512_set1_ps(-0.f));  // -|v|
  t = _mm512_max_ps(_mm512_set1_ps(-80.f), t);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(vec::kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(vec::kLn2Hi), t);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(vec::kLn2Lo), r);
  __m512 p = _mm512_set1_ps(vec::kSigmoidExpPoly[0]);
  for (int k = 1; k < 6; ++k) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(vec::kSigmoidExpPoly[k]));
  const __m512 e = _mm512_scalef_ps(p, n);  // p 2^n, exact
  __m512 s = _mm512_div_ps(_mm512_set1_ps(1.f), _mm512_add_ps(e, _mm512_set1_ps(1.f)));
  s = _mm512_mask_mul_ps(s, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), s, e);
  return _mm512_mul_ps(v, s);
}
JOULE_AVX2_FMA JOULE_ALWAYS_INLINE __m256 silu8(__m256 v) {
  __m256 t = _mm256_or_ps(v, _mm256_set1_ps(-0.f));
  t = _mm256_max_ps(_mm256_set1_ps(-80.f), t);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(t, _mm256_set1_ps(vec::kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(vec::kLn2Hi), t);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(vec::kLn2Lo), r);
  __m256 p = _mm256_set1_ps(vec::kSigmoidExpPoly[0]);
  for (int k = 1; k < 6; ++k) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(vec::kSigmoidExpPoly[k]));
  // 2^n from its exponent bits (n in [-116, 0]: a normal power), p 2^n exact.
  const __m256 pow2 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  const __m256 e = _mm256_mul_ps(p, pow2);
  const __m256 s = _mm256_div_ps(_mm256_set1_ps(1.f), _mm256_add_ps(e, _mm256_set1_ps(1.f)));
  const __m256 neg = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ);
  return _mm256_mul_ps(v, _mm256_blendv_ps(s, _mm256_mul_ps(s, e), neg));
}
JOULE_AVX2_FMA void silu_avx2(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, silu8(_mm256_loadu_ps(x + i)));
  silu_scalar(x + i, n - i);
}

using SiluSpan = void (*)(float*, int64_t);

template <class Y>
JOULE_ALWAYS_INLINE void put(float v, float zp, Y* o) {
  if constexpr (std::is_same_v<Y, float>) *o = v;
  else *o = qint::requant_code<Y>(v, zp);
}

// y[i * ldy + j] = Requant(acc[i * ldacc + j]) for i < rows, j < n: channel j (bias[j], scale[j])
// or, Plane, one channel (bias[0], scale[0]). A local copy of the parameters and restrict
// pointers: a uint8 store may otherwise alias them, which keeps GCC from vectorising. SiLU: the
// scaled values of as many rows as fill a chunk, one span of silu over them, then the outputs.
template <int Act, class Y, bool Plane, SiluSpan Silu>
JOULE_ALWAYS_INLINE void body(const qint::Requant& rq, const float* bias_, const float* scale_, const float* acc_,
                              int64_t ldacc, Y* y_, int64_t ldy, int64_t rows, int64_t n) {
  qint::Requant r;
  r.alpha = rq.alpha;
  r.beta = rq.beta;
  r.post = rq.post;
  const float zp = rq.zero_point, post = rq.post;
  const float* __restrict bias = bias_;
  const float* __restrict scale = scale_;
  const float b0 = bias[0], s0 = scale[0];
  if constexpr (Act != 4) {
    for (int64_t i = 0; i < rows; ++i) {
      const float* __restrict acc = acc_ + i * ldacc;
      Y* __restrict y = y_ + i * ldy;
      for (int64_t j = 0; j < n; ++j)
        put(r.activated<Act>(acc[j], Plane ? b0 : bias[j], Plane ? s0 : scale[j]), zp, y + j);
    }
  } else {
    constexpr int64_t kChunk = 1024;
    alignas(64) float t[kChunk];
    const int64_t width = std::min(kChunk, n), per = std::max<int64_t>(1, kChunk / width);
    for (int64_t i0 = 0; i0 < rows; i0 += per) {
      const int64_t nr = std::min(per, rows - i0);
      for (int64_t j0 = 0; j0 < n; j0 += width) {
        const int64_t m = std::min(width, n - j0);
        for (int64_t i = 0; i < nr; ++i) {
          const float* __restrict acc = acc_ + (i0 + i) * ldacc + j0;
          float* __restrict ti = t + i * m;
          for (int64_t j = 0; j < m; ++j)
            ti[j] = r.activated<0>(acc[j], Plane ? b0 : bias[j0 + j], Plane ? s0 : scale[j0 + j]);
        }
        Silu(t, nr * m);
        for (int64_t i = 0; i < nr; ++i) {
          Y* __restrict y = y_ + (i0 + i) * ldy + j0;
          const float* __restrict ti = t + i * m;
          for (int64_t j = 0; j < m; ++j) put(ti[j] * post, zp, y + j);
        }
      }
    }
  }
}

// The same with AVX-512 intrinsics, 16 channels at a time (a masked tail): each step the scalar
// form's operation (compares and blends for its selects, vdivps for its division), so the same
// bits; no loop setup per row, which matters for rows of a few dozen channels.
template <int Act>
JOULE_AVX512 JOULE_ALWAYS_INLINE __m512 activated16(__m512 a, __m512 b, __m512 s, const qint::Requant& r) {
  __m512 v = _mm512_mul_ps(_mm512_add_ps(a, b), s);
  const __m512 zero = _mm512_setzero_ps();
  if constexpr (Act == 1) v = _mm512_max_ps(v, zero);  // v > 0 ? v : 0 (NaN, -0 -> 0: max returns its 2nd operand)
  if constexpr (Act == 2)
    v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ), _mm512_mul_ps(v, _mm512_set1_ps(r.alpha)), v);
  if constexpr (Act == 3) {
    const __m512 lo = _mm512_set1_ps(r.alpha), hi = _mm512_set1_ps(r.beta);
    const __mmask16 below = _mm512_cmp_ps_mask(v, lo, _CMP_LT_OQ), above = _mm512_cmp_ps_mask(v, hi, _CMP_GT_OQ);
    v = _mm512_mask_blend_ps(below, _mm512_mask_blend_ps(above, v, hi), lo);
  }
  if constexpr (Act == 4) v = _mm512_mul_ps(silu16(v), _mm512_set1_ps(r.post));
  if constexpr (Act == 5) {
    __m512 g = _mm512_add_ps(_mm512_div_ps(v, _mm512_set1_ps(6.f)), _mm512_set1_ps(0.5f));
    g = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(g, zero, _CMP_LT_OQ), g, zero);
    g = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(g, _mm512_set1_ps(1.f), _CMP_GT_OQ), g, _mm512_set1_ps(1.f));
    v = _mm512_mul_ps(_mm512_mul_ps(v, g), _mm512_set1_ps(r.post));
  }
  return v;
}
// qint::requant_code of 16 values, stored under mask m.
template <class Y>
JOULE_AVX512 JOULE_ALWAYS_INLINE void put16(__m512 v, float zp, Y* y, __mmask16 m) {
  if constexpr (std::is_same_v<Y, float>) {
    _mm512_mask_storeu_ps(y, m, v);
  } else {
    constexpr float lo = std::numeric_limits<Y>::min(), hi = std::numeric_limits<Y>::max(), kRound = 12582912.0f;
    v = _mm512_add_ps(v, _mm512_set1_ps(zp));
    v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_set1_ps(lo - 1), _CMP_GE_OQ), _mm512_set1_ps(lo - 1), v);
    v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_set1_ps(hi + 1), _CMP_GT_OQ), v, _mm512_set1_ps(hi + 1));
    __m512 q = _mm512_sub_ps(_mm512_add_ps(v, _mm512_set1_ps(kRound)), _mm512_set1_ps(kRound));
    q = _mm512_min_ps(_mm512_max_ps(q, _mm512_set1_ps(lo)), _mm512_set1_ps(hi));
    const __m512i i = _mm512_cvttps_epi32(q);
    if constexpr (std::is_same_v<Y, uint8_t>) _mm_mask_storeu_epi8(y, m, _mm512_cvtusepi32_epi8(i));
    else _mm_mask_storeu_epi8(y, m, _mm512_cvtsepi32_epi8(i));
  }
}
template <int Act, class Y, bool Plane>
JOULE_AVX512 void run_avx512(const qint::Requant& r, const float* bias, const float* scale, const float* acc,
                             int64_t ldacc, Y* y, int64_t ldy, int64_t rows, int64_t n) {
  const float zp = r.zero_point;
  const __m512 b0 = _mm512_set1_ps(bias[0]), s0 = _mm512_set1_ps(scale[0]);
  for (int64_t i = 0; i < rows; ++i) {
    const float* a = acc + i * ldacc;
    Y* o = y + i * ldy;
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = n - j >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (n - j)) - 1);
      const __m512 b = Plane ? b0 : _mm512_maskz_loadu_ps(m, bias + j), s = Plane ? s0 : _mm512_maskz_loadu_ps(m, scale + j);
      put16(activated16<Act>(_mm512_maskz_loadu_ps(m, a + j), b, s, r), zp, o + j, m);
    }
  }
}

template <class Y>
using Fn = void (*)(const qint::Requant&, const float*, const float*, const float*, int64_t, Y*, int64_t, int64_t, int64_t);

template <int Act, class Y, bool Plane>
void run_base(const qint::Requant& r, const float* b, const float* s, const float* a, int64_t lda, Y* y, int64_t ldy,
              int64_t rows, int64_t n) {
  body<Act, Y, Plane, &silu_scalar>(r, b, s, a, lda, y, ldy, rows, n);
}
template <int Act, class Y, bool Plane>
JOULE_AVX2 void run_avx2(const qint::Requant& r, const float* b, const float* s, const float* a, int64_t lda, Y* y,
                         int64_t ldy, int64_t rows, int64_t n) {
  body<Act, Y, Plane, &silu_avx2>(r, b, s, a, lda, y, ldy, rows, n);
}
template <int Act, class Y, bool Plane>
Fn<Y> pick() {
  if (cpu_features().avx512) return &run_avx512<Act, Y, Plane>;
  if (cpu_features().avx2_fma) return &run_avx2<Act, Y, Plane>;
  return &run_base<Act, Y, Plane>;
}
template <class Y, bool Plane>
Fn<Y> pick(int act) {
  switch (act) {
    case 1: return pick<1, Y, Plane>();
    case 2: return pick<2, Y, Plane>();
    case 3: return pick<3, Y, Plane>();
    case 4: return pick<4, Y, Plane>();
    case 5: return pick<5, Y, Plane>();
    default: return pick<0, Y, Plane>();
  }
}

}  // namespace

template <class Y>
void requant_rows(const ops::qint::Requant& r, const float* bias, const float* acc, int64_t ldacc, Y* y, int64_t ldy,
                  int64_t rows, int64_t c0, int64_t nc) {
  pick<Y, false>(r.act)(r, bias + c0, r.scale.data() + c0, acc, ldacc, y, ldy, rows, nc);
}

template <class Y>
void requant_plane(const ops::qint::Requant& r, const float* bias, const float* acc, Y* y, int64_t n, int64_t c) {
  pick<Y, true>(r.act)(r, bias + c, r.scale.data() + c, acc, n, y, n, 1, n);
}

#define JOULE_REQUANT(Y)                                                                                              \
  template void requant_rows<Y>(const ops::qint::Requant&, const float*, const float*, int64_t, Y*, int64_t, int64_t, \
                                int64_t, int64_t);                                                                    \
  template void requant_plane<Y>(const ops::qint::Requant&, const float*, const float*, Y*, int64_t, int64_t);
JOULE_REQUANT(float)
JOULE_REQUANT(uint8_t)
JOULE_REQUANT(int8_t)
#undef JOULE_REQUANT

}  // namespace joule::kernels
