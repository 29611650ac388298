// Winograd F(2x2|4x4, 3x3) with 16 channels per AVX-512 vector (the method: winograd_impl.h),
// and its bfloat16 form (GEMMs on VDPBF16PS): this file is built with -mavx512bf16, and the bf16
// form is only made on CPUs with AVX512-BF16 (winograd.cpp).
// GCC 12 warns about _mm512_undefined_* inside its own intrinsics headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "joule/kernels/conv/winograd_impl.h"

namespace joule::kernels {
namespace {

struct Avx512 {
  using R = __m512;
  static constexpr int W = 16;
  static constexpr int kNr = 12;  // 12 x 2 accumulators + 2 weights + 1 broadcast of 32 registers
  static constexpr int64_t kBlockBytes = int64_t{1} << 20;
  static R load(const float* p) { return _mm512_load_ps(p); }
  static R loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R v) { _mm512_store_ps(p, v); }
  static R set1(float v) { return _mm512_set1_ps(v); }
  static R zero() { return _mm512_setzero_ps(); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R fmadd(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }    // a b + c
  static R fnmadd(R a, R b, R c) { return _mm512_fnmadd_ps(a, b, c); }  // c - a b
  static R max(R a, R b) { return _mm512_max_ps(a, b); }
  static R min(R a, R b) { return _mm512_min_ps(a, b); }
  static R leaky(R v, R alpha) {  // v < 0 ? alpha v : v (NaN stays)
    return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v, alpha);
  }
  static __mmask16 first(int n) { return static_cast<__mmask16>((1u << n) - 1); }
  // Lanes lo..hi-1 = p[0 .. hi-lo), the others zero.
  static R load_lanes(const float* p, int lo, int hi) {
    return _mm512_maskz_expandloadu_ps(static_cast<__mmask16>(first(hi) & ~first(lo)), p);
  }
  static R loadu_n(const float* p, int n) { return _mm512_maskz_loadu_ps(first(n), p); }
  static void storeu_n(float* p, R v, int n) { _mm512_mask_storeu_ps(p, first(n), v); }

  // bfloat16 (the Bf16 form only): 16 floats rounded to nearest even, stored as 16 bf16; 16 pairs
  // loaded or one pair broadcast; acc + a.lo b.lo + a.hi b.hi per float lane.
  using Pairs = __m512bh;
  static void store_bf16(uint16_t* p, R v) { _mm256_store_si256(reinterpret_cast<__m256i*>(p), (__m256i)_mm512_cvtneps_pbh(v)); }
  static Pairs load_pairs(const uint16_t* p) { return (__m512bh)_mm512_load_si512(p); }
  static Pairs broadcast_pair(const uint16_t* p) {
    int32_t pair;
    std::memcpy(&pair, p, 4);
    return (__m512bh)_mm512_set1_epi32(pair);
  }
  static R dot2(R acc, Pairs a, Pairs b) { return _mm512_dpbf16_ps(acc, a, b); }

  // In-register transpose of a 16x16 float matrix (r[i] = row i).
  static void transpose(R* r) {
    R t[16];
    for (int i = 0; i < 8; ++i) {
      t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int q = 0; q < 4; ++q) {  // s[4q + c]: rows 4q..4q+3 at column 4L + c of each 128-bit lane L
      const __m512d a = _mm512_castps_pd(t[4 * q]), b = _mm512_castps_pd(t[4 * q + 1]);
      const __m512d c = _mm512_castps_pd(t[4 * q + 2]), d = _mm512_castps_pd(t[4 * q + 3]);
      r[4 * q] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
      r[4 * q + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
      r[4 * q + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
      r[4 * q + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    for (int c = 0; c < 4; ++c) {  // 4x4 transpose of 128-bit lanes among r[c], r[4+c], r[8+c], r[12+c]
      const R u0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x44);
      const R u1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xEE);
      const R u2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x44);
      const R u3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xEE);
      t[c] = _mm512_shuffle_f32x4(u0, u2, 0x88);
      t[4 + c] = _mm512_shuffle_f32x4(u0, u2, 0xDD);
      t[8 + c] = _mm512_shuffle_f32x4(u1, u3, 0x88);
      t[12 + c] = _mm512_shuffle_f32x4(u1, u3, 0xDD);
    }
    for (int i = 0; i < 16; ++i) r[i] = t[i];
  }
};

}  // namespace

std::unique_ptr<ConvKernel> make_winograd_conv_avx512(const ConvShape& s, const float* weight, const float* bias,
                                                      const Epilogue& ep, int tile, bool nhwc, int threads) {
  return make_winograd_for<Avx512>(s, weight, bias, ep, tile, nhwc, threads);
}

std::unique_ptr<ConvKernel> make_winograd_conv_avx512_bf16(const ConvShape& s, const float* weight, const float* bias,
                                                           const Epilogue& ep, int tile, bool nhwc, int threads) {
  return make_winograd_for<Avx512, true>(s, weight, bias, ep, tile, nhwc, threads);
}

}  // namespace joule::kernels
