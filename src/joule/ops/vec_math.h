#pragma once
// Float32 math that GCC vectorises: no libm calls, no branches (the ops are built with -O3
// -fno-trapping-math, which lets GCC if-convert the selects). Ops put a loop over these in an
// always-inline body and compile it twice: plainly, and inside a JOULE_AVX512 function that
// core/cpu_features selects at run time. Accuracy is stated per function; the reference
// kernels (libm) stay in use for float64.
#include <bit>
#include <cstdint>
#include <limits>

#define JOULE_ALWAYS_INLINE inline __attribute__((always_inline))
// The middle tier, for CPUs with AVX2 and FMA but not AVX-512 (AMD Zen 2/3, Intel before Skylake-SP):
// the same always-inline bodies 8 wide instead of the baseline build's 4. No FMA: nothing is
// contracted, so the values are the baseline loop's bit for bit (GELU's far tail, for one, moves
// by a few ulp under contraction).
#define JOULE_AVX2 __attribute__((target("avx2")))
// The same CPUs for hand-written intrinsics kernels, which use FMA (their values are their own,
// tested against the reference within stated errors).
#define JOULE_AVX2_FMA __attribute__((target("avx2,fma")))
#if defined(__clang__)  // (clang has no prefer-vector-width target option: it would drop the whole attribute)
#define JOULE_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"), min_vector_width(512)))
#else
#define JOULE_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,prefer-vector-width=512")))
#endif

namespace joule::ops::vec {

// The reduction t = n ln2 + r (ln2 in a high part whose products with n are exact, and a low
// part) and a degree-5 polynomial for e^r (a relative minimax fit on |r| <= ln2 / 2: 7.5e-8 in
// exact arithmetic), highest coefficient first: the sigmoid spans (ops/vec_sigmoid.cpp) and the
// integer plan's SiLU (ops/int_util.h) share them.
inline constexpr float kLog2e = 1.4426950408889634f, kLn2Hi = 0.693145751953125f, kLn2Lo = 1.4286068203094173e-06f;
inline constexpr float kSigmoidExpPoly[6] = {8.2976539134e-03f, 4.1915381928e-02f, 1.6667574746e-01f,
                                             4.9998894852e-01f, 9.9999969199e-01f, 1.0000000717e+00f};

// The range reduction of exp and expm1: x = n ln2 + r, n = round(x / ln2) (an integer-valued
// float), r = x - n ln2 in two steps (Cody-Waite: ln2 in a high part whose products with n are
// exact, and a low part).
JOULE_ALWAYS_INLINE float round_x_over_ln2(float x) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding and subtracting rounds to nearest
  return (x * 1.4426950408889634f + kRound) - kRound;
}
JOULE_ALWAYS_INLINE float minus_n_ln2(float x, float n) {
  const float r = x - n * 0.693145751953125f;
  return r - n * 1.4286068203094173e-06f;
}
// An integer-valued n (|n| < 2^22) as an int32 without a float-to-int conversion, which is
// undefined for NaN (the NaN inputs of exp and friends): n + 1.5 * 2^23 holds n in its low
// mantissa bits. (A NaN gives some int; the NaN result does not depend on it.)
JOULE_ALWAYS_INLINE int32_t int_of(float n) { return std::bit_cast<int32_t>(n + 12582912.0f) - 0x4B400000; }
// 2^n for integer-valued n in [-252, 254] as two factors whose product it is, neither outside
// float's normal range (2^n itself may be subnormal or overflow).
JOULE_ALWAYS_INLINE void pow2_halves(float n, float* lo, float* hi) {
  const int32_t ni = int_of(n), a = ni >> 1, b = ni - a;
  *lo = std::bit_cast<float>((a + 127) << 23);
  *hi = std::bit_cast<float>((b + 127) << 23);
}

// e^r for the reduced r of x (x clamped to float's exp range by the caller) as a degree-7
// Taylor series, and n.
JOULE_ALWAYS_INLINE float exp_reduced(float x, float* n_out) {
  const float n = round_x_over_ln2(x);
  const float r = minus_n_ln2(x, n);
  float p = 1.f / 5040;
  p = p * r + 1.f / 720;
  p = p * r + 1.f / 120;
  p = p * r + 1.f / 24;
  p = p * r + 1.f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  *n_out = n;
  return p;
}

// e^x, relative error below 2e-7 for x in [-87.3, 88.3]. Below -87.3 the result is 0 (e^x
// would be subnormal there); above 88.3 it is e^88.3. exp_reduced, 2^n written into the
// exponent bits.
JOULE_ALWAYS_INLINE float exp(float x) {
  constexpr float kLo = -87.3f, kHi = 88.3f;
  const bool under = x < kLo;
  x = x < kLo ? kLo : x;
  x = x > kHi ? kHi : x;
  float n;
  const float p = exp_reduced(x, &n);
  const float scale = std::bit_cast<float>((int_of(n) + 127) << 23);
  return under ? 0.f : p * scale;
}

// erfc(z) for z >= 0: the Chebyshev fit of Numerical Recipes' erfcc (fit error below 1.2e-7
// relative), with exp above; float rounding of z^2 adds about z^2 * 1.2e-7 relative.
JOULE_ALWAYS_INLINE float erfc_nonneg(float z) {
  const float t = 1.f / (1.f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return t * exp(p - z * z);
}

// e^x over float's whole range, relative error below 2.5e-7 where the result is normal: +inf
// above 88.72, subnormals down to 2^-149, 0 below, NaN for NaN. The same reduction and series
// as exp(); 2^n is applied as two factors so that neither leaves float's normal range.
JOULE_ALWAYS_INLINE float exp_full(float x) {
  constexpr float kLo = -104.f, kHi = 89.f;
  x = x < kLo ? kLo : x;
  x = x > kHi ? kHi : x;
  float n, lo, hi;
  const float p = exp_reduced(x, &n);
  pow2_halves(n, &lo, &hi);
  return p * lo * hi;
}

// e^x - 1, relative error below 3e-7 for every x (-1 below -17, +inf above 88.72): a degree-10
// series on |x| < ln 2 (no cancellation near 0), otherwise 2^n (e^r - 1) + (2^n - 1).
JOULE_ALWAYS_INLINE float expm1(float x) {
  float xc = x < -17.f ? -17.f : x;
  xc = xc > 89.f ? 89.f : xc;
  const float ax = xc < 0.f ? -xc : xc;
  const float n = ax < 0.6931f ? 0.f : round_x_over_ln2(xc);
  const float r = minus_n_ln2(xc, n);
  float p = 1.f / 39916800;
  p = p * r + 1.f / 3628800;
  p = p * r + 1.f / 362880;
  p = p * r + 1.f / 40320;
  p = p * r + 1.f / 5040;
  p = p * r + 1.f / 720;
  p = p * r + 1.f / 120;
  p = p * r + 1.f / 24;
  p = p * r + 1.f / 6;
  p = p * r + 0.5f;
  p = p * r * r + r;  // e^r - 1
  float sa, sb;
  pow2_halves(n, &sa, &sb);
  // 2^n p + (2^n - 1); for n near 128, 2^n itself overflows: 2^n (p + 1), where the -1 is lost
  // in rounding anyway.
  return n > 100.f ? sa * ((p + 1.f) * sb) : (sa * p) * sb + (sa * sb - 1.f);
}

// Natural logarithm, within 2 ulp for positive normal and subnormal x; -inf at 0, NaN below 0
// and for NaN, +inf at +inf. x = 2^e m with m in [sqrt(1/2), sqrt 2), log m = 2 atanh(s) with
// s = (m - 1) / (m + 1), |s| < 0.172, as an odd series to s^11.
JOULE_ALWAYS_INLINE float log(float x) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const bool sub = x < 1.17549435e-38f;
  const float xs = sub ? x * 8388608.0f : x;  // subnormals scaled by 2^23
  const int32_t bits = std::bit_cast<int32_t>(xs);
  float m = std::bit_cast<float>((bits & 0x007fffff) | 0x3f800000);  // [1, 2)
  float e = static_cast<float>(((bits >> 23) & 0xff) - 127) - (sub ? 23.f : 0.f);
  const bool big = m > 1.41421356f;
  m = big ? m * 0.5f : m;
  e = big ? e + 1.f : e;
  const float s = (m - 1.f) / (m + 1.f), s2 = s * s;
  float p = 1.f / 11;
  p = p * s2 + 1.f / 9;
  p = p * s2 + 1.f / 7;
  p = p * s2 + 1.f / 5;
  p = p * s2 + 1.f / 3;
  const float lm = 2.f * s + 2.f * s * s2 * p;
  float r = e * 0.693145751953125f + (lm + e * 1.4286068203094173e-06f);
  r = x == kInf ? kInf : r;
  r = x == 0.f ? -kInf : r;
  r = x < 0.f ? std::numeric_limits<float>::quiet_NaN() : r;
  return x != x ? x : r;
}

// log(1 + u) for u > -1 without the rounding of 1 + u: log(w) + (u - (w - 1)) / w, w = 1 + u.
JOULE_ALWAYS_INLINE float log1p(float u) {
  const float w = 1.f + u;
  const float c = (u - (w - 1.f)) / w;
  return log(w) + (w == std::numeric_limits<float>::infinity() ? 0.f : c);
}

// 1 / (1 + e^-x) from e = e^-|x| (never overflows): 1/(1+e) for x >= 0, e/(1+e) below.
// Relative error below 3e-7; 0 and 1 at -inf and +inf, NaN for NaN.
JOULE_ALWAYS_INLINE float sigmoid(float x) {
  const float e = exp_full(x < 0.f ? x : -x);
  const float s = 1.f / (1.f + e);
  return x >= 0.f ? s : e * s;
}

// tanh x = -expm1(-2|x|) / (2 + expm1(-2|x|)) with the sign of x: relative error below 4e-7,
// no cancellation near 0.
JOULE_ALWAYS_INLINE float tanh(float x) {
  const float e = expm1(x < 0.f ? 2.f * x : -2.f * x);
  const float t = -e / (2.f + e);
  return x < 0.f ? -t : t;
}

// log(1 + e^x) = max(x, 0) + log1p(e^-|x|).
JOULE_ALWAYS_INLINE float softplus(float x) {
  const float l = log1p(exp_full(x < 0.f ? x : -x));
  return (x > 0.f ? x : 0.f) + l;
}

// erf: an odd Taylor series to x^15 on |x| < 0.5 (no cancellation), 1 - erfc(|x|) above,
// with the sign of x. Relative error below 3e-7.
JOULE_ALWAYS_INLINE float erf(float x) {
  const float a = x < 0.f ? -x : x, x2 = x * x;
  float p = -1.f / 75600;
  p = p * x2 + 1.f / 9360;
  p = p * x2 - 1.f / 1320;
  p = p * x2 + 1.f / 216;
  p = p * x2 - 1.f / 42;
  p = p * x2 + 1.f / 10;
  p = p * x2 - 1.f / 3;
  p = p * x2 + 1.f;
  const float small = 1.1283791670955126f * x * p;  // 2 / sqrt(pi)
  const float big = 1.f - erfc_nonneg(a);
  return a < 0.5f ? small : (x < 0.f ? -big : big);
}

// GELU, exact form: 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2), with the erfc of
// the negative side taken as 2 - erfc(|.|). No cancellation for negative x. Against double:
// relative error below 2e-6 for x >= -3 (|gelu| > 4e-3), absolute below 1e-6 for |x| <= 12
// (tests/ops/test_vec_math.cpp); further left the float rounding of x^2 in e^(-x^2/2) grows
// the relative error of values already below 1e-5.
JOULE_ALWAYS_INLINE float gelu_erf(float x) {
  const float z = x * 0.7071067811865476f;
  const float c = erfc_nonneg(z < 0.f ? -z : z);
  return 0.5f * x * (z < 0.f ? c : 2.f - c);
}

// GELU, tanh form: 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3).
JOULE_ALWAYS_INLINE float gelu_tanh(float x) {
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x / (1.f + exp(-2.f * u));
}

}  // namespace joule::ops::vec
