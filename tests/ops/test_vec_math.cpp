// ops/vec_math.h (the vectorised float32 exp/erfc/GELU) against libm in double, and the float32
// fast paths of Gelu, Softmax and LayerNormalization against the same ops in float64. CTest runs
// these once more with JOULE_ISA=avx2, so both the AVX-512 and the baseline builds are checked.
#include <cmath>
#include <cstdio>

#include "joule/core/cpu_features.h"
#include "joule/ops/vec_math.h"
#include "joule/ops/vec_sigmoid.h"
#include "ops/test_nn_util.h"
#include "test_tensors.h"

namespace joule::testing::nn {
namespace {

namespace vec = joule::ops::vec;

double rel_err(double got, double want) { return std::abs(got - want) / std::max(std::abs(want), 1e-300); }

TEST(VecMath, ExpRelativeErrorOverTheRange) {
  double worst = 0;
  for (double x = -87.0; x <= 88.0; x += 0.001) {
    const float xf = static_cast<float>(x);
    worst = std::max(worst, rel_err(vec::exp(xf), std::exp(static_cast<double>(xf))));
  }
  EXPECT_LT(worst, 2.5e-7);
  EXPECT_EQ(vec::exp(0.f), 1.f);
  EXPECT_EQ(vec::exp(-100.f), 0.f);
  EXPECT_EQ(vec::exp(-std::numeric_limits<float>::infinity()), 0.f);
  EXPECT_TRUE(std::isnan(vec::exp(std::nanf(""))));
}

// The GELU forms against double-precision references (the tanh form as x / (1 + e^(-2u)), the
// same function without the cancellation of 1 + tanh(u) for u << 0).
TEST(VecMath, GeluMatchesErfAndTanhForms) {
  double rel_erf = 0, rel_tanh = 0, abs_erf = 0, abs_tanh = 0;
  for (double x = -12.0; x <= 12.0; x += 0.0005) {
    const float xf = static_cast<float>(x);
    const double xd = xf;
    const double erf_ref = 0.5 * xd * std::erfc(-xd / std::sqrt(2.0));
    const double tanh_ref = xd / (1 + std::exp(-2 * std::sqrt(2 / M_PI) * (xd + 0.044715 * xd * xd * xd)));
    abs_erf = std::max(abs_erf, std::abs(vec::gelu_erf(xf) - erf_ref));
    abs_tanh = std::max(abs_tanh, std::abs(vec::gelu_tanh(xf) - tanh_ref));
    // Relative error where the value matters: from x = -3 (|gelu| ~ 4e-3) up. Further left
    // e^(-x^2/2) carries the float rounding of x^2, a relative error that grows with x^2 on
    // values below 1e-5.
    if (x >= -3 && xd != 0) {
      rel_erf = std::max(rel_erf, rel_err(vec::gelu_erf(xf), erf_ref));
      rel_tanh = std::max(rel_tanh, rel_err(vec::gelu_tanh(xf), tanh_ref));
    }
  }
  EXPECT_LT(rel_erf, 2e-6);
  EXPECT_LT(rel_tanh, 2e-6);
  EXPECT_LT(abs_erf, 1e-6);   // |x| up to 12: a few ulp of the largest values
  EXPECT_LT(abs_tanh, 1e-6);
  EXPECT_EQ(vec::gelu_erf(0.f), 0.f);
  EXPECT_EQ(vec::gelu_erf(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  std::printf("gelu erf: max rel %.3g (x >= -3), max abs %.3g; tanh: max rel %.3g, max abs %.3g\n", rel_erf,
              abs_erf, rel_tanh, abs_tanh);
}

// Float32 (fast path) against float64 (libm reference) for the same values.
void expect_float_matches_double(const std::string& op, const std::vector<Tensor>& in, Attrs attrs, int64_t opset,
                                 double atol, double rtol) {
  std::vector<Tensor> in64;
  for (const Tensor& t : in) in64.push_back(t.cast(DType::Float64));
  const Tensor got = run1(op, in, attrs, opset);
  const Tensor want = run1(op, in64, attrs, opset);
  EXPECT_EQ(got.dtype(), DType::Float32);
  expect_close(got, want, atol, rtol, op);
}

// The functions behind the unary simd kernels (kernels/eltwise/unary.cpp) against libm in
// double over their ranges, with the bounds the comments in ops/vec_math.h state, and their
// special values.
template <class F, class G>
double worst_rel(double lo, double hi, double step, F got, G want, double floor = 0) {
  double worst = 0;
  for (double x = lo; x <= hi; x += step) {
    const float xf = static_cast<float>(x);
    const double w = want(static_cast<double>(xf));
    worst = std::max(worst, std::abs(got(xf) - w) / std::max(std::abs(w), floor));
  }
  return worst;
}

TEST(VecMath, TranscendentalsWithinStatedErrors) {
  EXPECT_LT(worst_rel(-87, 88.7, 0.0007, [](float x) { return vec::exp_full(x); }, [](double x) { return std::exp(x); }), 2.5e-7);
  EXPECT_LT(worst_rel(-20, 88.7, 0.0003, [](float x) { return vec::expm1(x); }, [](double x) { return std::expm1(x); }), 3e-7);
  EXPECT_LT(worst_rel(-1e-3, 1e-3, 1.3e-7, [](float x) { return vec::expm1(x); }, [](double x) { return std::expm1(x); }, 1e-30), 3e-7);
  EXPECT_LT(worst_rel(1e-6, 1e3, 0.0009, [](float x) { return vec::log(x); }, [](double x) { return std::log(x); }, 1e-3), 2.5e-7);
  EXPECT_LT(worst_rel(-0.999, 10, 0.00011, [](float x) { return vec::log1p(x); }, [](double x) { return std::log1p(x); }, 1e-30), 3e-7);
  EXPECT_LT(worst_rel(-80, 80, 0.0003, [](float x) { return vec::sigmoid(x); }, [](double x) { return 1 / (1 + std::exp(-x)); }), 3e-7);
  EXPECT_LT(worst_rel(-12, 12, 0.00013, [](float x) { return vec::tanh(x); }, [](double x) { return std::tanh(x); }, 1e-30), 4e-7);
  EXPECT_LT(worst_rel(-80, 80, 0.0003, [](float x) { return vec::softplus(x); }, [](double x) { return std::log1p(std::exp(x)); }), 4e-7);
  EXPECT_LT(worst_rel(-6, 6, 0.00007, [](float x) { return vec::erf(x); }, [](double x) { return std::erf(x); }, 1e-30), 3e-7);
  // log near 1, subnormals
  EXPECT_LT(worst_rel(0.999, 1.001, 1e-7, [](float x) { return vec::log(x); }, [](double x) { return std::log(x); }, 1e-30), 2.5e-7);
  EXPECT_NEAR(vec::log(1e-42f), std::log(static_cast<double>(1e-42f)), 1e-5);
}

TEST(VecMath, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  EXPECT_EQ(vec::exp_full(89.f), inf);
  EXPECT_EQ(vec::exp_full(inf), inf);
  EXPECT_EQ(vec::exp_full(-inf), 0.f);
  EXPECT_GT(vec::exp_full(-100.f), 0.f);  // subnormal, not flushed
  EXPECT_EQ(vec::expm1(-inf), -1.f);
  EXPECT_EQ(vec::expm1(inf), inf);
  EXPECT_EQ(vec::log(0.f), -inf);
  EXPECT_EQ(vec::log(inf), inf);
  EXPECT_TRUE(std::isnan(vec::log(-1.f)));
  EXPECT_EQ(vec::sigmoid(inf), 1.f);
  EXPECT_EQ(vec::sigmoid(-inf), 0.f);
  EXPECT_EQ(vec::tanh(inf), 1.f);
  EXPECT_EQ(vec::tanh(-inf), -1.f);
  EXPECT_EQ(vec::softplus(inf), inf);
  EXPECT_EQ(vec::softplus(-inf), 0.f);
  EXPECT_EQ(vec::erf(inf), 1.f);
  EXPECT_EQ(vec::erf(-inf), -1.f);
  for (float (*f)(float) : {+[](float x) { return vec::exp_full(x); }, +[](float x) { return vec::expm1(x); },
                            +[](float x) { return vec::log(x); }, +[](float x) { return vec::sigmoid(x); },
                            +[](float x) { return vec::tanh(x); }, +[](float x) { return vec::softplus(x); },
                            +[](float x) { return vec::erf(x); }})
    EXPECT_TRUE(std::isnan(f(nan)));
}

// The AVX-512 spans of ops/vec_sigmoid.h against float64: sigmoid and SiLU over the range, with
// the bias and residual added first, every tail length, in place, and the special values.
// The intrinsic sigmoid / SiLU spans (AVX-512 and AVX2 + FMA) against float64: the stated error,
// every tail length, in place, the special values.
using SigmoidSpan = void (*)(const float*, float*, int64_t, bool, float, const float*);
void check_sigmoid_spans(SigmoidSpan sigmoid) {
  std::vector<float> x;
  for (double v = -80; v <= 80; v += 0.0003) x.push_back(static_cast<float>(v));
  std::vector<float> sig(x.size()), silu(x.size());
  sigmoid(x.data(), sig.data(), static_cast<int64_t>(x.size()), false, 0.f, nullptr);
  sigmoid(x.data(), silu.data(), static_cast<int64_t>(x.size()), true, 0.f, nullptr);
  double worst_sig = 0, worst_silu = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double xd = x[i], s = 1 / (1 + std::exp(-xd));
    worst_sig = std::max(worst_sig, rel_err(sig[i], s));
    if (xd != 0) worst_silu = std::max(worst_silu, rel_err(silu[i], xd * s));
  }
  EXPECT_LT(worst_sig, 4e-7);
  EXPECT_LT(worst_silu, 5e-7);
  // v = x + add + res, every length 0..40 (the masked tail), in place.
  for (int64_t n = 0; n <= 40; ++n) {
    std::vector<float> a(static_cast<size_t>(n)), r(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      a[static_cast<size_t>(i)] = static_cast<float>(i) * 0.37f - 7.f;
      r[static_cast<size_t>(i)] = static_cast<float>(i % 5) - 2.f;
    }
    std::vector<float> y = a;
    y.push_back(123.f);  // past the end: untouched
    sigmoid(y.data(), y.data(), n, true, 0.5f, r.data());
    for (int64_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(a[static_cast<size_t>(i)] + 0.5f) + r[static_cast<size_t>(i)];
      EXPECT_NEAR(y[static_cast<size_t>(i)], v / (1 + std::exp(-v)), 5e-7 * std::abs(v) + 1e-30) << "n=" << n << " i=" << i;
    }
    EXPECT_EQ(y.back(), 123.f);
  }
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const float in[6] = {inf, -inf, nan, 0.f, -100.f, 100.f};
  float s[6], l[6];
  sigmoid(in, s, 6, false, 0.f, nullptr);
  sigmoid(in, l, 6, true, 0.f, nullptr);
  EXPECT_EQ(s[0], 1.f);
  EXPECT_EQ(s[1], 0.f);
  EXPECT_TRUE(std::isnan(s[2]));
  EXPECT_EQ(s[3], 0.5f);
  EXPECT_GT(s[4], 0.f);  // e^-100, subnormal, not flushed
  EXPECT_LT(s[4], 1e-43f);
  EXPECT_EQ(s[5], 1.f);
  EXPECT_EQ(l[0], inf);
  EXPECT_TRUE(std::isnan(l[1]));  // -inf * 0, as PyTorch's x * sigmoid(x)
  EXPECT_TRUE(std::isnan(l[2]));
  EXPECT_EQ(l[3], 0.f);
}

TEST(VecMath, SigmoidAvx512SpansWithinStatedError) {
  if (!cpu_features().avx512) GTEST_SKIP() << "no AVX-512 on this CPU (" << cpu_features().isa << ")";
  check_sigmoid_spans(vec::sigmoid_avx512);
}

TEST(VecMath, SigmoidAvx2SpansWithinStatedError) {
  if (!cpu_features().avx2_fma) GTEST_SKIP() << "no AVX2 + FMA on this CPU (" << cpu_features().isa << ")";
  check_sigmoid_spans(vec::sigmoid_avx2);
}

// The AVX2 GELU span against float64 with gelu_erf's stated error, over the same grid (a span of
// 24001 values: vector body and tail), lengths 0..17 leave what lies past the end untouched,
// and the special values match the scalar form (and PyTorch: gelu(-inf) is NaN).
TEST(VecMath, GeluAvx2SpanWithinStatedError) {
  if (!cpu_features().avx2_fma) GTEST_SKIP() << "no AVX2 + FMA on this CPU (" << cpu_features().isa << ")";
  std::vector<float> x;
  for (int i = -24000; i <= 24000; ++i) x.push_back(static_cast<float>(i * 0.0005));
  std::vector<float> y(x.size());
  vec::gelu_avx2(x.data(), y.data(), static_cast<int64_t>(x.size()));
  double rel = 0, abs = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double xd = x[i], want = 0.5 * xd * std::erfc(-xd / std::sqrt(2.0));
    abs = std::max(abs, std::abs(y[i] - want));
    if (xd >= -3 && xd != 0) rel = std::max(rel, rel_err(y[i], want));
  }
  EXPECT_LT(rel, 2e-6);
  EXPECT_LT(abs, 1e-6);
  std::printf("gelu_avx2: max rel %.3g (x >= -3), max abs %.3g\n", rel, abs);
  for (int64_t n = 0; n <= 17; ++n) {
    std::vector<float> v(static_cast<size_t>(n) + 1, 123.f);
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i) - 8.5f;
    vec::gelu_avx2(v.data(), v.data(), n);
    for (int64_t i = 0; i < n; ++i)
      EXPECT_NEAR(v[static_cast<size_t>(i)], vec::gelu_erf(static_cast<float>(i) - 8.5f), 2e-6) << "n=" << n << " i=" << i;
    EXPECT_EQ(v.back(), 123.f) << "n=" << n;
  }
  const float inf = std::numeric_limits<float>::infinity();
  const float in[5] = {inf, -inf, std::nanf(""), 0.f, -20.f};
  float out[5];
  vec::gelu_avx2(in, out, 5);
  EXPECT_EQ(out[0], inf);
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(out[3], 0.f);
  EXPECT_EQ(out[4], 0.f);  // -20 e^-200: below float's range
}

TEST(VecMath, GeluOpFloat32) {
  // 1000 elements: vector body and remainder; values wide enough for both tails.
  const Tensor x = random_tensor({10, 100}, 7, -8.f, 8.f);
  expect_float_matches_double("Gelu", {x}, {}, 20, 1e-7, 1e-6);
  expect_float_matches_double("Gelu", {x}, {{"approximate", std::string("tanh")}}, 20, 1e-7, 1e-6);
}

TEST(VecMath, SoftmaxOpFloat32RowLengths) {
  for (int64_t n : {1, 3, 16, 17, 65, 200}) {
    const Tensor x = random_tensor({3, n}, static_cast<uint32_t>(n), -20.f, 20.f);
    expect_float_matches_double("Softmax", {x}, {}, 13, 1e-8, 2e-6);
  }
}

TEST(VecMath, LayerNormOpFloat32) {
  for (int64_t n : {1, 7, 128, 385}) {
    const Tensor x = random_tensor({4, n}, static_cast<uint32_t>(n), -3.f, 5.f);
    const Tensor scale = random_tensor({n}, 11, 0.5f, 2.f), bias = random_tensor({n}, 12);
    expect_float_matches_double("LayerNormalization", {x, scale, bias}, {}, 17, 1e-5, 1e-5);
  }
}

}  // namespace
}  // namespace joule::testing::nn
