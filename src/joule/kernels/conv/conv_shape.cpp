#include "joule/kernels/conv/conv_shape.h"

#include <fmt/core.h>

#include <array>
#include <utility>

#include "joule/core/cpu_features.h"
#include "joule/core/error.h"
#include "joule/ops/vec_sigmoid.h"

namespace joule::kernels {

std::string ConvShape::str() const {
  return fmt::format("N{} C{} H{} W{} -> M{} k{}x{} s{}x{} d{}x{} p{},{},{},{} g{}", n, c, h, w, m, kh, kw,
                     stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, pad_bottom, pad_right, group);
}

namespace {

// apply() with the activation a template argument: the loops below vectorise (a switch inside
// the loop kept Sigmoid and SiLU scalar: 10 ns per output).
template <Activation A>
JOULE_ALWAYS_INLINE float act(float v, float alpha, float beta) {
  Epilogue e;
  e.act = A;
  e.alpha = alpha;
  e.beta = beta;
  return e.apply(v);
}
template <Activation A, bool R>
JOULE_ALWAYS_INLINE void finish_body(float* y, const float* res, int64_t n, float bias, float alpha, float beta) {
  if constexpr (R) {
    for (int64_t i = 0; i < n; ++i) y[i] = act<A>(y[i] + bias + res[i], alpha, beta);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = act<A>(y[i] + bias, alpha, beta);
  }
}
using Finish = void (*)(float*, const float*, int64_t, float, float, float);
template <Activation A, bool R>
void finish_base(float* y, const float* res, int64_t n, float bias, float alpha, float beta) {
  finish_body<A, R>(y, res, n, bias, alpha, beta);
}
template <Activation A, bool R>
JOULE_AVX512 void finish_avx512(float* y, const float* res, int64_t n, float bias, float alpha, float beta) {
  if constexpr (A == Activation::kSigmoid || A == Activation::kSilu)
    ops::vec::sigmoid_avx512(y, y, n, A == Activation::kSilu, bias, R ? res : nullptr);
  else
    finish_body<A, R>(y, res, n, bias, alpha, beta);
}
template <Activation A, bool R>
JOULE_AVX2 void finish_avx2(float* y, const float* res, int64_t n, float bias, float alpha, float beta) {
  if constexpr (A == Activation::kSigmoid || A == Activation::kSilu)
    ops::vec::sigmoid_avx2(y, y, n, A == Activation::kSilu, bias, R ? res : nullptr);
  else
    finish_body<A, R>(y, res, n, bias, alpha, beta);
}
constexpr size_t kActs = static_cast<size_t>(Activation::kHardSwish) + 1;
template <bool R, size_t... I>
std::array<Finish, kActs> table(bool avx512, bool avx2, std::index_sequence<I...>) {
  return {(avx512 ? &finish_avx512<static_cast<Activation>(I), R>
                  : avx2 ? &finish_avx2<static_cast<Activation>(I), R> : &finish_base<static_cast<Activation>(I), R>)...};
}

}  // namespace

void Epilogue::finish(float* y, const float* res, int64_t count, float bias) const {
  const CpuFeatures& f = cpu_features();
  static const std::array<Finish, kActs> plain = table<false>(f.avx512, f.avx2_fma, std::make_index_sequence<kActs>());
  static const std::array<Finish, kActs> with_res = table<true>(f.avx512, f.avx2_fma, std::make_index_sequence<kActs>());
  (res ? with_res : plain)[static_cast<size_t>(act)](y, res, count, bias, alpha, beta);
}

void ConvKernel::run_weights(const float*, const float*, const float*, const float*, float*, ThreadPool&) const {
  fail_internal("this convolution kernel was made with constant weights");
}

}  // namespace joule::kernels
