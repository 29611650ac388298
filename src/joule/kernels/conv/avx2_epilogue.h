#pragma once
// The simple activations of a conv epilogue (Epilogue::simple_activation) on 8 floats, for the
// AVX2 kernels (grouped, implicit_nhwc); included only by files compiled with AVX2 + FMA.
// NaN stays NaN, as in the reference kernel.
#include <immintrin.h>

#include "joule/kernels/conv/conv_shape.h"

namespace joule::kernels {

inline __m256 avx2_activate(__m256 v, const Epilogue& ep) {
  switch (ep.act) {
    case Activation::kRelu: return _mm256_max_ps(_mm256_setzero_ps(), v);  // NaN: the second operand
    case Activation::kClip: return _mm256_min_ps(_mm256_set1_ps(ep.beta), _mm256_max_ps(_mm256_set1_ps(ep.alpha), v));
    case Activation::kLeakyRelu:
      return _mm256_blendv_ps(v, _mm256_mul_ps(v, _mm256_set1_ps(ep.alpha)),
                              _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
    default: return v;
  }
}

}  // namespace joule::kernels
