// Winograd F(2x2|4x4, 3x3) with 8 channels per AVX2 vector and FMA (the method:
// winograd_impl.h), for CPUs without AVX-512.
#include "joule/kernels/conv/winograd_impl.h"

namespace joule::kernels {
namespace {

struct Avx2 {
  using R = __m256;
  static constexpr int W = 8;
  static constexpr int kNr = 6;  // 6 x 2 accumulators + 2 weights + 1 broadcast of 16 registers
  static constexpr int64_t kBlockBytes = int64_t{1} << 20;
  static R load(const float* p) { return _mm256_load_ps(p); }
  static R loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R v) { _mm256_store_ps(p, v); }
  static R set1(float v) { return _mm256_set1_ps(v); }
  static R zero() { return _mm256_setzero_ps(); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R fmadd(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }    // a b + c
  static R fnmadd(R a, R b, R c) { return _mm256_fnmadd_ps(a, b, c); }  // c - a b
  static R max(R a, R b) { return _mm256_max_ps(a, b); }
  static R min(R a, R b) { return _mm256_min_ps(a, b); }
  static R leaky(R v, R alpha) {  // v < 0 ? alpha v : v (NaN stays)
    return _mm256_blendv_ps(v, _mm256_mul_ps(v, alpha), _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
  }
  static __m256i first(int n) {  // lanes below n all ones
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  // Lanes lo..hi-1 = p[0 .. hi-lo), the others zero (edges of the image only).
  static R load_lanes(const float* p, int lo, int hi) {
    alignas(32) float b[8] = {};
    std::memcpy(b + lo, p, sizeof(float) * static_cast<size_t>(hi - lo));
    return _mm256_load_ps(b);
  }
  static R loadu_n(const float* p, int n) { return _mm256_maskload_ps(p, first(n)); }
  static void storeu_n(float* p, R v, int n) { _mm256_maskstore_ps(p, first(n), v); }

  // In-register transpose of an 8x8 float matrix (r[i] = row i).
  static void transpose(R* r) {
    R t[8], s[8];
    for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);      // r0[0] r1[0] r0[1] r1[1] | +4
      t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);  // r0[2] r1[2] r0[3] r1[3] | +4
    }
    for (int q = 0; q < 2; ++q) {  // rows 4q..4q+3, column c (and c + 4) of each 128-bit lane
      s[4 * q] = _mm256_shuffle_ps(t[4 * q], t[4 * q + 2], 0x44);
      s[4 * q + 1] = _mm256_shuffle_ps(t[4 * q], t[4 * q + 2], 0xEE);
      s[4 * q + 2] = _mm256_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0x44);
      s[4 * q + 3] = _mm256_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0xEE);
    }
    for (int c = 0; c < 4; ++c) {
      r[c] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x20);
      r[4 + c] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x31);
    }
  }
};

}  // namespace

std::unique_ptr<ConvKernel> make_winograd_conv_avx2(const ConvShape& s, const float* weight, const float* bias,
                                                    const Epilogue& ep, int tile, bool nhwc, int threads) {
  return make_winograd_for<Avx2>(s, weight, bias, ep, tile, nhwc, threads);
}

}  // namespace joule::kernels
