// The integer ops (ConvInteger, QLinearConv, MatMulInteger, QLinearMatMul, joule QConv and
// QMatMul) against direct loops written here: random geometries (groups, depthwise, strides,
// pads, dilations, batch 2), uint8/int8 codes with non-zero zero points, per-tensor and
// per-channel weight scales, saturation at both ends and rounding ties.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "joule/ops/quantize_util.h"
#include "op_test_util.h"

using namespace joule;
using joule::testing::make_node;
using joule::testing::run_op;

namespace {

template <class T>
Tensor random_codes(Shape s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  Tensor t(dtype_of<T>, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(d(rng));
  return t;
}

struct Geo {
  int64_t n, c, h, w, m, k, stride, pad, dil, group;
};

// Direct integer convolution: acc[n, m, oh, ow] = sum (x - xzp)(w - wzp[m]), padding is real 0.
std::vector<int64_t> direct_conv(const Tensor& x, int64_t xzp, const Tensor& w, const std::vector<int64_t>& wzp,
                                 const Geo& g, int64_t* oh, int64_t* ow) {
  *oh = (g.h + 2 * g.pad - g.dil * (g.k - 1) - 1) / g.stride + 1;
  *ow = (g.w + 2 * g.pad - g.dil * (g.k - 1) - 1) / g.stride + 1;
  const int64_t cg = g.c / g.group, mg = g.m / g.group;
  std::vector<int64_t> acc(static_cast<size_t>(g.n * g.m * *oh * *ow), 0);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t m = 0; m < g.m; ++m)
      for (int64_t y = 0; y < *oh; ++y)
        for (int64_t z = 0; z < *ow; ++z) {
          int64_t s = 0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < g.k; ++ky)
              for (int64_t kx = 0; kx < g.k; ++kx) {
                const int64_t iy = y * g.stride + ky * g.dil - g.pad, ix = z * g.stride + kx * g.dil - g.pad;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                const int64_t c = (m / mg) * cg + ci;
                s += (x.value_as_int(((n * g.c + c) * g.h + iy) * g.w + ix) - xzp) *
                     (w.value_as_int(((m * cg + ci) * g.k + ky) * g.k + kx) - wzp[static_cast<size_t>(m)]);
              }
          acc[static_cast<size_t>(((n * g.m + m) * *oh + y) * *ow + z)] = s;
        }
  return acc;
}

std::map<std::string, ir::Attribute> conv_attrs(const Geo& g) {
  return {{"kernel_shape", std::vector<int64_t>{g.k, g.k}},
          {"strides", std::vector<int64_t>{g.stride, g.stride}},
          {"pads", std::vector<int64_t>{g.pad, g.pad, g.pad, g.pad}},
          {"dilations", std::vector<int64_t>{g.dil, g.dil}},
          {"group", g.group}};
}

const Geo kGeos[] = {{2, 4, 7, 6, 6, 3, 1, 1, 1, 1},  {1, 6, 9, 9, 6, 3, 2, 1, 1, 6},  // depthwise, stride 2
                     {2, 4, 8, 8, 8, 3, 1, 2, 2, 2},  // groups, dilation, big pad
                     {1, 3, 5, 5, 5, 1, 1, 0, 1, 1}, {1, 8, 6, 6, 4, 5, 1, 2, 1, 1}};

template <class X>
void check_conv_integer_ops(uint32_t seed) {
  for (const Geo& g : kGeos) {
    SCOPED_TRACE(::testing::Message() << "geo c" << g.c << " m" << g.m << " k" << g.k << " g" << g.group);
    const Tensor x = random_codes<X>({g.n, g.c, g.h, g.w}, seed++);
    const Tensor w = random_codes<int8_t>({g.m, g.c / g.group, g.k, g.k}, seed++);
    const int64_t xzp = std::is_same_v<X, uint8_t> ? 131 : -7;
    std::vector<int64_t> wzp(static_cast<size_t>(g.m));
    Tensor wzp_t(DType::Int8, {g.m});
    for (int64_t m = 0; m < g.m; ++m) wzp_t.data<int8_t>()[m] = static_cast<int8_t>(wzp[static_cast<size_t>(m)] = m % 3 - 1);
    int64_t oh, ow;
    const std::vector<int64_t> acc = direct_conv(x, xzp, w, wzp, g, &oh, &ow);
    const Tensor xzp_t = Tensor::scalar<X>(static_cast<X>(xzp));

    // ConvInteger
    auto ci = run_op(make_node("ConvInteger", 4, 1, conv_attrs(g)), {x, w, xzp_t, wzp_t}, 10);
    ASSERT_EQ(ci[0].dtype(), DType::Int32);
    ASSERT_EQ(ci[0].shape(), (Shape{g.n, g.m, oh, ow}));
    for (size_t i = 0; i < acc.size(); ++i) ASSERT_EQ(ci[0].data<int32_t>()[i], acc[i]) << i;

    // QConv: per-channel scales, bias, Relu, float and requantized (uint8 / int8) outputs
    const float xs = 0.02f;
    std::vector<float> ws(static_cast<size_t>(g.m)), bias(static_cast<size_t>(g.m));
    for (int64_t m = 0; m < g.m; ++m) {
      ws[static_cast<size_t>(m)] = 0.001f * static_cast<float>(m + 1);
      bias[static_cast<size_t>(m)] = 0.05f * static_cast<float>(m) - 0.1f;
    }
    const Tensor ws_t = Tensor::from_vector(ws, {g.m}), b_t = Tensor::from_vector(bias, {g.m});
    auto attrs = conv_attrs(g);
    attrs["activation"] = std::string("Relu");
    ir::Node qc = make_node("QConv", 9, 1, attrs);
    qc.domain = "joule";
    const int64_t plane = oh * ow;
    auto real = [&](size_t i) {
      const size_t m = static_cast<size_t>((static_cast<int64_t>(i) / plane) % g.m);
      return std::max(0.f, static_cast<float>(acc[i]) * (xs * ws[m]) + bias[m]);
    };
    auto yf = run_op(qc, {x, Tensor::scalar<float>(xs), xzp_t, w, ws_t, wzp_t, b_t, Tensor(), Tensor()});
    ASSERT_EQ(yf[0].dtype(), DType::Float32);
    for (size_t i = 0; i < acc.size(); ++i) ASSERT_NEAR(yf[0].data<float>()[i], real(i), 1e-5f * (1 + std::abs(real(i))));
    // y_scale small enough that the top saturates
    const float ys = 0.004f;
    auto yq = run_op(qc, {x, Tensor::scalar<float>(xs), xzp_t, w, ws_t, wzp_t, b_t, Tensor::scalar<float>(ys),
                          Tensor::scalar<int8_t>(-5)});
    ASSERT_EQ(yq[0].dtype(), DType::Int8);
    int saturated = 0;
    for (size_t i = 0; i < acc.size(); ++i) {
      // The integer plan's epilogue (ops/int_util.h Requant): bias in accumulator units, the
      // output scale, Relu, the zero point, then round half to even.
      const size_t m = static_cast<size_t>((static_cast<int64_t>(i) / plane) % g.m);
      const float s = xs * ws[m];
      const float v = std::max(0.f, (static_cast<float>(acc[i]) + bias[m] / s) * (s / ys));
      const float want = std::min(127.f, std::max(-128.f, std::nearbyint(v - 5.f)));
      ASSERT_EQ(yq[0].data<int8_t>()[i], static_cast<int8_t>(want)) << i;
      saturated += want == 127.f;
    }
    EXPECT_GT(saturated, 0);
  }
}

}  // namespace

TEST(IntOps, ConvIntegerAndQConvUint8) { check_conv_integer_ops<uint8_t>(100); }
TEST(IntOps, ConvIntegerAndQConvInt8) { check_conv_integer_ops<int8_t>(200); }

TEST(IntOps, QLinearConvRequantizesWithInt32Bias) {
  const Geo g{1, 2, 4, 4, 3, 3, 1, 1, 1, 1};
  const Tensor x = random_codes<uint8_t>({1, 2, 4, 4}, 7);
  const Tensor w = random_codes<int8_t>({3, 2, 3, 3}, 8);
  int64_t oh, ow;
  const std::vector<int64_t> acc = direct_conv(x, 100, w, {0, 0, 0}, g, &oh, &ow);
  const Tensor b = Tensor::from_vector<int32_t>({1000, -2000, 0}, {3});
  const std::vector<float> ws = {0.01f, 0.002f, 0.003f};
  auto y = run_op(make_node("QLinearConv", 9, 1, conv_attrs(g)),
                  {x, Tensor::scalar<float>(0.05f), Tensor::scalar<uint8_t>(100), w, Tensor::from_vector(ws, {3}),
                   Tensor::from_vector<int8_t>({0, 0, 0}, {3}), Tensor::scalar<float>(0.5f), Tensor::scalar<uint8_t>(128), b},
                  10);
  ASSERT_EQ(y[0].dtype(), DType::UInt8);
  for (size_t i = 0; i < acc.size(); ++i) {
    const size_t m = i / static_cast<size_t>(oh * ow);
    const float v = static_cast<float>(acc[i] + b.data<int32_t>()[m]) * (0.05f * ws[m] / 0.5f);
    EXPECT_EQ(y[0].data<uint8_t>()[i], static_cast<uint8_t>(std::min(255.f, std::max(0.f, std::nearbyint(v) + 128.f))));
  }
}

TEST(IntOps, MatMulIntegerQLinearMatMulAndQMatMul) {
  const int64_t B = 2, M = 3, K = 37, N = 5;
  const Tensor a = random_codes<uint8_t>({B, M, K}, 11);
  const Tensor w = random_codes<int8_t>({K, N}, 12);
  std::vector<int64_t> acc(static_cast<size_t>(B * M * N));
  for (int64_t r = 0; r < B * M; ++r)
    for (int64_t n = 0; n < N; ++n) {
      int64_t s = 0;
      for (int64_t k = 0; k < K; ++k) s += (a.data<uint8_t>()[r * K + k] - 120) * (w.data<int8_t>()[k * N + n] - 2);
      acc[static_cast<size_t>(r * N + n)] = s;
    }
  auto mi = run_op(make_node("MatMulInteger", 4, 1), {a, w, Tensor::scalar<uint8_t>(120), Tensor::scalar<int8_t>(2)}, 10);
  for (size_t i = 0; i < acc.size(); ++i) ASSERT_EQ(mi[0].data<int32_t>()[i], acc[i]);
  auto ql = run_op(make_node("QLinearMatMul", 8, 1),
                   {a, Tensor::scalar<float>(0.1f), Tensor::scalar<uint8_t>(120), w, Tensor::scalar<float>(0.01f),
                    Tensor::scalar<int8_t>(2), Tensor::scalar<float>(0.2f), Tensor::scalar<int8_t>(3)},
                   10);
  for (size_t i = 0; i < acc.size(); ++i)
    ASSERT_EQ(ql[0].data<int8_t>()[i],
              static_cast<int8_t>(std::min(127.f, std::max(-128.f, std::nearbyint(static_cast<float>(acc[i]) *
                                                                                   (0.1f * 0.01f / 0.2f)) + 3.f))));
  // QMatMul, per-column scales, Clip, float output
  std::vector<float> ws(N);
  for (int64_t n = 0; n < N; ++n) ws[static_cast<size_t>(n)] = 0.01f * static_cast<float>(n + 1);
  ir::Node qm = make_node("QMatMul", 9, 1, {{"activation", std::string("Clip")}, {"activation_params", std::vector<float>{-1.f, 2.f}}});
  qm.domain = "joule";
  auto y = run_op(qm, {a, Tensor::scalar<float>(0.1f), Tensor::scalar<uint8_t>(120), w, Tensor::from_vector(ws, {N}),
                       Tensor::scalar<int8_t>(2), Tensor(), Tensor(), Tensor()});
  ASSERT_EQ(y[0].shape(), (Shape{B, M, N}));
  for (size_t i = 0; i < acc.size(); ++i) {
    const float v = std::min(2.f, std::max(-1.f, static_cast<float>(acc[i]) * (0.1f * ws[i % N])));
    ASSERT_NEAR(y[0].data<float>()[i], v, 1e-5f);
  }
}

TEST(IntOps, RequantizationRoundsTiesToEven) {
  // real = acc * 1 * 0.5: acc 1 -> 0.5 -> 0, acc 3 -> 1.5 -> 2, acc 5 -> 2.5 -> 2, acc -1 -> -0.5 -> -0
  const Tensor a = Tensor::from_vector<int8_t>({1, 3, 5, -1, 127}, {5, 1});
  const Tensor w = Tensor::from_vector<int8_t>({1}, {1, 1});
  ir::Node qm = make_node("QMatMul", 9, 1);
  qm.domain = "joule";
  auto y = run_op(qm, {a, Tensor::scalar<float>(1.f), Tensor::scalar<int8_t>(0), w, Tensor::scalar<float>(0.5f),
                       Tensor(), Tensor(), Tensor::scalar<float>(1.f), Tensor::scalar<uint8_t>(10)});
  ASSERT_EQ(y[0].dtype(), DType::UInt8);
  const uint8_t want[] = {10, 12, 12, 10, 74};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(y[0].data<uint8_t>()[i], want[i]) << i;
}

// quant::quantize_values (AVX-512 and AVX2: a multiply by 1/s, dividing only near a half-integer) gives
// the codes of the division ONNX and ONNX Runtime define, bit for bit: random values, exact and
// nearly exact ties (k + 0.5) s, values past the code range, +-inf, NaN, folded clamps, every
// tail length, and scales whose reciprocal is inexact (0.1, 1/3, 0.0078...) or not normal.
template <class Q>
Q quantize_by_division(float x, float s, float z, float lo, float hi) {
  x = x < lo ? lo : x;
  x = x > hi ? hi : x;
  if (std::isnan(x)) return std::numeric_limits<Q>::min();
  const double q = std::nearbyint(static_cast<double>(x / s)) + z;  // x / s in float, ties to even
  return static_cast<Q>(std::clamp(q, static_cast<double>(std::numeric_limits<Q>::min()),
                                   static_cast<double>(std::numeric_limits<Q>::max())));
}

template <class Q>
void check_quantize_values(uint32_t seed) {
  std::mt19937 rng(seed);
  const float inf = std::numeric_limits<float>::infinity();
  for (float s : {0.1f, 1.f / 3, 0.0078125f, 0.0123457f, 2.5f, 1e-3f, 7.3e-6f, 1e-39f, 3e38f}) {
    for (float z : {0.f, 3.f, 128.f, -7.f}) {
      if (z < static_cast<float>(std::numeric_limits<Q>::min()) || z > static_cast<float>(std::numeric_limits<Q>::max())) continue;
      std::vector<float> x;
      std::uniform_real_distribution<float> u(-300.f, 300.f);
      std::uniform_int_distribution<int> k(-300, 300);
      for (int i = 0; i < 3000; ++i) {
        x.push_back(u(rng) * s);
        const float tie = (static_cast<float>(k(rng)) + 0.5f) * s;  // exactly or nearly a tie
        x.push_back(tie);
        x.push_back(std::nextafter(tie, inf));
        x.push_back(std::nextafter(tie, -inf));
      }
      for (float v : {inf, -inf, std::nanf(""), 0.f, -0.f, 1e30f, -1e30f, 4e6f * s, -4e6f * s}) x.push_back(v);
      for (float lo : {-inf, 0.f})
        for (int64_t n : {static_cast<int64_t>(x.size()), int64_t{1}, int64_t{15}, int64_t{17}, int64_t{33}}) {
          const float hi = lo == 0.f ? 6.f : inf;
          std::vector<Q> got(static_cast<size_t>(n) + 1, Q{42});
          joule::ops::quant::quantize_values<Q>(x.data(), got.data(), n, s, z, lo, hi);
          for (int64_t i = 0; i < n; ++i)
            ASSERT_EQ(+got[static_cast<size_t>(i)], +quantize_by_division<Q>(x[static_cast<size_t>(i)], s, z, lo, hi))
                << "x=" << x[static_cast<size_t>(i)] << " s=" << s << " z=" << z << " clamp " << lo << ".." << hi;
          EXPECT_EQ(got.back(), Q{42});  // nothing written past n
        }
    }
  }
}

TEST(IntOps, QuantizeValuesEqualTheDivisionBitForBit) {
  check_quantize_values<uint8_t>(1);
  check_quantize_values<int8_t>(2);
  check_quantize_values<int16_t>(3);
}
