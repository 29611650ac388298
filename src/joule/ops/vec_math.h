#pragma once
// Float32 math that GCC vectorises: no libm calls, no branches (the ops are built with -O3
// -fno-trapping-math, which lets GCC if-convert the selects). Ops put a loop over these in an
// always-inline body and compile it twice: plainly, and inside a JOULE_AVX512 function that
// core/cpu_features selects at run time. Accuracy is stated per function; the reference
// kernels (libm) stay in use for float64.
#include <bit>
#include <cstdint>

#define JOULE_ALWAYS_INLINE inline __attribute__((always_inline))
#define JOULE_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,prefer-vector-width=512")))

namespace joule::ops::vec {

// e^x, relative error below 2e-7 for x in [-87.3, 88.3]. Below -87.3 the result is 0 (e^x
// would be subnormal there); above 88.3 it is e^88.3. Cody-Waite reduction x = n ln2 + r with
// |r| <= ln2/2, degree-7 Taylor series for e^r, 2^n written into the exponent bits.
JOULE_ALWAYS_INLINE float exp(float x) {
  constexpr float kLo = -87.3f, kHi = 88.3f, kRound = 12582912.0f;  // 1.5 * 2^23
  const bool under = x < kLo;
  x = x < kLo ? kLo : x;
  x = x > kHi ? kHi : x;
  const float n = (x * 1.4426950408889634f + kRound) - kRound;  // round to nearest
  float r = x - n * 0.693145751953125f;                         // ln2, high bits (exact product)
  r = r - n * 1.4286068203094173e-06f;                          // ln2, low bits
  float p = 1.f / 5040;
  p = p * r + 1.f / 720;
  p = p * r + 1.f / 120;
  p = p * r + 1.f / 24;
  p = p * r + 1.f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  const float scale = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
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
