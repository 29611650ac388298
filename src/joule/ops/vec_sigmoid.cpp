#include "joule/ops/vec_sigmoid.h"

#include <immintrin.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 on the intrinsics' _mm512_undefined_ps
#endif

#include "joule/ops/vec_math.h"

namespace joule::ops::vec {
namespace {


// 1 / (1 + e^-x) for 16 lanes from e = e^-|x|, t = max(-|x|, -104): n = round(t / ln 2),
// r = t - n ln 2 in two steps (as vec_math.h), e^r by a degree-5 polynomial (a relative
// minimax fit on |r| <= ln2 / 2: 7.5e-8 in exact arithmetic), 2^n by vscalefps (exact, with
// subnormals and 0). 1 + e is in [1, 2]: vrcp14ps (14 bits) and a Newton step give its
// reciprocal; x < 0 takes e / (1 + e). NaN passes through every step (max returns its second
// operand when one is NaN).
JOULE_AVX512 JOULE_ALWAYS_INLINE __m512 sigmoid16(__m512 x) {
  __m512 t = _mm512_or_ps(x, _mm512_set1_ps(-0.f));  // -|x|
  t = _mm512_max_ps(_mm512_set1_ps(-104.f), t);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), t);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kSigmoidExpPoly[0]);
  for (int k = 1; k < 6; ++k) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kSigmoidExpPoly[k]));
  const __m512 e = _mm512_scalef_ps(p, n);  // e^-|x|
  const __m512 d = _mm512_add_ps(e, _mm512_set1_ps(1.f));
  __m512 s = _mm512_rcp14_ps(d);
  s = _mm512_mul_ps(s, _mm512_fnmadd_ps(d, s, _mm512_set1_ps(2.f)));
  return _mm512_mask_mul_ps(s, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), s, e);
}

template <bool Silu, bool Res>
JOULE_AVX512 JOULE_ALWAYS_INLINE void one16(const float* x, float* y, const float* res, __m512 add, __mmask16 m) {
  __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, x), add);
  if constexpr (Res) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, res));
  const __m512 s = sigmoid16(v);
  _mm512_mask_storeu_ps(y, m, Silu ? _mm512_mul_ps(v, s) : s);
}

template <bool Silu, bool Res>
JOULE_AVX512 void span(const float* x, float* y, int64_t n, float add, const float* res) {
  const __m512 a = _mm512_set1_ps(add);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) one16<Silu, Res>(x + i, y + i, Res ? res + i : nullptr, a, 0xFFFF);
  if (i < n) one16<Silu, Res>(x + i, y + i, Res ? res + i : nullptr, a, static_cast<__mmask16>((1u << (n - i)) - 1));
}

// 8 lanes with AVX2 + FMA: the reduction and polynomial above; 2^n (n in [-151, 0]) as two
// factors, 2^(n + 64) and the constant 2^-64, both normal, so results down to the subnormals come
// out as with vscalefps (one extra rounding there); 1 / (1 + e) by an exact division. NaN: max
// returns its second operand (t), and the NaN reaches the result through r.
JOULE_AVX2_FMA JOULE_ALWAYS_INLINE __m256 pow2i(__m256 k) {  // k integer-valued in [-126, 127]
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23));
}
// e^u = 2^n e^r: returns e^r (the reduction and polynomial above) and n = round(u / ln 2).
JOULE_AVX2_FMA JOULE_ALWAYS_INLINE __m256 exp_reduced8(__m256 u, __m256* n) {
  *n = _mm256_round_ps(_mm256_mul_ps(u, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(*n, _mm256_set1_ps(kLn2Hi), u);
  r = _mm256_fnmadd_ps(*n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kSigmoidExpPoly[0]);
  for (int k = 1; k < 6; ++k) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kSigmoidExpPoly[k]));
  return p;
}
JOULE_AVX2_FMA JOULE_ALWAYS_INLINE __m256 sigmoid8(__m256 x) {
  __m256 t = _mm256_or_ps(x, _mm256_set1_ps(-0.f));  // -|x|
  t = _mm256_max_ps(_mm256_set1_ps(-104.f), t);
  __m256 n;
  const __m256 p = exp_reduced8(t, &n);
  // 2^n = 2^(n + 64) 2^-64: n + 64 in [-87, 64] is a normal power, and the product with the
  // constant rounds into the subnormals as vscalefps does.
  const __m256 e = _mm256_mul_ps(_mm256_mul_ps(p, pow2i(_mm256_add_ps(n, _mm256_set1_ps(64.f)))), _mm256_set1_ps(0x1p-64f));
  const __m256 s = _mm256_div_ps(_mm256_set1_ps(1.f), _mm256_add_ps(e, _mm256_set1_ps(1.f)));
  return _mm256_blendv_ps(s, _mm256_mul_ps(s, e), _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
}

template <bool Silu, bool Res>
JOULE_AVX2_FMA void span_avx2(const float* x, float* y, int64_t n, float add, const float* res) {
  const __m256 a = _mm256_set1_ps(add);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_add_ps(_mm256_loadu_ps(x + i), a);
    if constexpr (Res) v = _mm256_add_ps(v, _mm256_loadu_ps(res + i));
    const __m256 s = sigmoid8(v);
    _mm256_storeu_ps(y + i, Silu ? _mm256_mul_ps(v, s) : s);
  }
  if (i == n) return;
  float xs[8] = {}, rs[8] = {}, ys[8];  // the tail through a buffer
  for (int64_t j = i; j < n; ++j) xs[j - i] = x[j], rs[j - i] = Res ? res[j] : 0.f;
  span_avx2<Silu, Res>(xs, ys, 8, add, rs);
  for (int64_t j = i; j < n; ++j) y[j] = ys[j - i];
}

// GELU, exact form, 8 lanes: vec_math.h's gelu_erf with FMA: 0.5 x erfc(-x / sqrt 2) from
// erfc(|z|) = t e^(P(t) - z^2), t = 1 / (1 + |z| / 2) (Numerical Recipes' erfcc fit), the
// negative side as 2 - erfc; e^u by the reduction and polynomial above for u >= -87 (e^u and
// 2^n normal), erfc taken as 0 below (the scalar form's e^u underflows there too). NaN stays NaN
// (through 0.5 x); +inf gives +inf (0.5 inf (2 - 0)) and -inf NaN (-inf times 0), as the scalar
// form and PyTorch. 1.2 ns per value against 2.7 for the loop GCC vectorises from gelu_erf and
// 0.9-1.3 for oneDNN's eltwise GELU (one Zen 3 core, best of 50, 4K to 1.2M values).
JOULE_AVX2_FMA JOULE_ALWAYS_INLINE __m256 exp8(__m256 u) {  // u in [-87, 88]: e^u normal (or +inf)
  __m256 n;
  const __m256 p = exp_reduced8(u, &n);
  return _mm256_mul_ps(p, pow2i(n));
}
constexpr float kErfcPoly[10] = {0.17087277f, -0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f,
                                 -0.18628806f, 0.09678418f,  0.37409196f, 1.00002368f, -1.26551223f};
JOULE_AVX2_FMA JOULE_ALWAYS_INLINE __m256 gelu8(__m256 x) {
  const __m256 z = _mm256_mul_ps(x, _mm256_set1_ps(0.7071067811865476f));
  // |z| capped at 1e4 (erfc is 0 long before): 1 + |z| / 2 stays finite for the reciprocal
  // (12 bits by vrcpps, one Newton step).
  const __m256 az = _mm256_min_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.f), z), _mm256_set1_ps(1e4f));
  const __m256 d = _mm256_fmadd_ps(az, _mm256_set1_ps(0.5f), _mm256_set1_ps(1.f));
  __m256 t = _mm256_rcp_ps(d);
  t = _mm256_mul_ps(t, _mm256_fnmadd_ps(d, t, _mm256_set1_ps(2.f)));
  __m256 p = _mm256_set1_ps(kErfcPoly[0]);
  for (int k = 1; k < 10; ++k) p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(kErfcPoly[k]));
  const __m256 u = _mm256_fnmadd_ps(z, z, p);
  const __m256 keep = _mm256_cmp_ps(u, _mm256_set1_ps(-87.f), _CMP_GE_OQ);  // below: erfc 0 (NaN: x is NaN)
  const __m256 c = _mm256_and_ps(keep, _mm256_mul_ps(t, exp8(_mm256_max_ps(_mm256_set1_ps(-87.f), u))));  // erfc(|z|)
  const __m256 neg = _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_LT_OQ);
  const __m256 e = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.f), c), c, neg);
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), e);
}

JOULE_AVX2_FMA void gelu_span_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {  // two independent chains per iteration (the polynomials are long)
    const __m256 a = gelu8(_mm256_loadu_ps(x + i)), b = gelu8(_mm256_loadu_ps(x + i + 8));
    _mm256_storeu_ps(y + i, a);
    _mm256_storeu_ps(y + i + 8, b);
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, gelu8(_mm256_loadu_ps(x + i)));
  if (i == n) return;
  float xs[8] = {}, ys[8];  // the tail through a buffer
  for (int64_t j = i; j < n; ++j) xs[j - i] = x[j];
  _mm256_storeu_ps(ys, gelu8(_mm256_loadu_ps(xs)));
  for (int64_t j = i; j < n; ++j) y[j] = ys[j - i];
}

}  // namespace

void gelu_avx2(const float* x, float* y, int64_t n) { gelu_span_avx2(x, y, n); }

void sigmoid_avx2(const float* x, float* y, int64_t n, bool silu, float add, const float* res) {
  if (silu) return res ? span_avx2<true, true>(x, y, n, add, res) : span_avx2<true, false>(x, y, n, add, res);
  return res ? span_avx2<false, true>(x, y, n, add, res) : span_avx2<false, false>(x, y, n, add, res);
}

void sigmoid_avx512(const float* x, float* y, int64_t n, bool silu, float add, const float* res) {
  if (silu) return res ? span<true, true>(x, y, n, add, res) : span<true, false>(x, y, n, add, res);
  return res ? span<false, true>(x, y, n, add, res) : span<false, false>(x, y, n, add, res);
}

}  // namespace joule::ops::vec
