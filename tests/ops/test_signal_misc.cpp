// Tests for Det, DFT, STFT, the window functions, MelWeightMatrix, MaxUnpool, Unique, the random
// ops (RandomUniform[Like], RandomNormal[Like], Bernoulli, training-mode Dropout) and the
// ai.onnx.preview.training optimizers (Adagrad, Momentum, Adam). Values are hand-computed or
// come from an independent naive computation in double (O(n^2) DFT sums, cofactor expansion).
#include <cmath>
#include <complex>
#include <numbers>

#include "ops/test_nn_util.h"
#include "test_tensor_util.h"

using namespace joule;
using namespace joule::testing;
using namespace joule::testing::nn;
using ir::Attribute;

namespace {

Attribute I(int64_t v) { return Attribute{v}; }
Attribute Fl(float v) { return Attribute{v}; }
using cd = std::complex<double>;

// ---------------- Det ----------------
double cofactor_det(const std::vector<double>& a, int64_t m) {
  if (m == 1) return a[0];
  double det = 0;
  for (int64_t j = 0; j < m; ++j) {
    std::vector<double> minor;
    for (int64_t r = 1; r < m; ++r)
      for (int64_t c = 0; c < m; ++c)
        if (c != j) minor.push_back(a[static_cast<size_t>(r * m + c)]);
    det += (j % 2 ? -1 : 1) * a[static_cast<size_t>(j)] * cofactor_det(minor, m - 1);
  }
  return det;
}

TEST(SignalDet, HandValuesAndSingular) {
  expect_values(run1("Det", {F({1, 2, 3, 4}, {2, 2})}), {-2}, {});
  // A zero first pivot needs a row swap; a singular matrix gives 0.
  expect_values(run1("Det", {F({0, 1, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, {2, 3, 3})}), {3, 0}, {2});
  EXPECT_THROW(run1("Det", {F({1, 2, 3, 4, 5, 6}, {2, 3})}), Error);
}

TEST(SignalDet, MatchesCofactorExpansion) {
  for (int64_t m : {1, 2, 3, 4, 5}) {
    const Tensor x = random_tensor({3, m, m}, static_cast<uint32_t>(m));
    const Tensor xd = x.cast(DType::Float64);
    const Tensor y = run1("Det", {xd});
    for (int64_t b = 0; b < 3; ++b) {
      std::vector<double> a(xd.data<double>() + b * m * m, xd.data<double>() + (b + 1) * m * m);
      EXPECT_NEAR(y.data<double>()[b], cofactor_det(a, m), 1e-12) << "m=" << m << " b=" << b;
    }
  }
}

// ---------------- DFT ----------------
// Naive DFT of one complex row, in double.
std::vector<cd> naive_dft(const std::vector<cd>& x, int64_t n, bool inverse) {
  std::vector<cd> y(static_cast<size_t>(n));
  const double s = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < n; ++k) {
    cd acc(0, 0);
    for (int64_t j = 0; j < n && j < static_cast<int64_t>(x.size()); ++j)
      acc += x[static_cast<size_t>(j)] * std::polar(1.0, s * 2 * std::numbers::pi * static_cast<double>((j * k) % n) / static_cast<double>(n));
    y[static_cast<size_t>(k)] = inverse ? acc / static_cast<double>(n) : acc;
  }
  return y;
}

TEST(SignalDft, MatchesNaiveSumForManyLengths) {
  for (int64_t n : {1, 2, 3, 5, 8, 12, 16, 17, 64, 100}) {
    for (bool inverse : {false, true}) {
      const Tensor x = random_tensor({2, n, 2}, static_cast<uint32_t>(n)).cast(DType::Float64);
      const Tensor y = run1("DFT", {x}, {{"inverse", I(inverse)}});
      ASSERT_EQ(y.shape(), (Shape{2, n, 2}));
      for (int64_t b = 0; b < 2; ++b) {
        std::vector<cd> row;
        for (int64_t j = 0; j < n; ++j) row.emplace_back(x.data<double>()[(b * n + j) * 2], x.data<double>()[(b * n + j) * 2 + 1]);
        const auto want = naive_dft(row, n, inverse);
        for (int64_t k = 0; k < n; ++k) {
          EXPECT_NEAR(y.data<double>()[(b * n + k) * 2], want[static_cast<size_t>(k)].real(), 1e-9) << n << " " << inverse;
          EXPECT_NEAR(y.data<double>()[(b * n + k) * 2 + 1], want[static_cast<size_t>(k)].imag(), 1e-9) << n << " " << inverse;
        }
      }
    }
  }
}

TEST(SignalDft, AxisOnesidedAndLength) {
  // x [1, 3, 5, 1] real, DFT along axis 2 with dft_length 7 (zero-padded), onesided: 4 bins.
  const Tensor x = random_tensor({1, 3, 5, 1}, 7);
  const Tensor y = run1("DFT", {x, Tensor::scalar<int64_t>(7)}, {{"axis", I(2)}, {"onesided", I(1)}}, 17, true);
  ASSERT_EQ(y.shape(), (Shape{1, 3, 4, 2}));
  for (int64_t r = 0; r < 3; ++r) {
    std::vector<cd> row;
    for (int64_t j = 0; j < 5; ++j) row.emplace_back(x.data<float>()[r * 5 + j], 0);
    const auto want = naive_dft(row, 7, false);
    for (int64_t k = 0; k < 4; ++k) {
      EXPECT_NEAR(y.data<float>()[(r * 4 + k) * 2], want[static_cast<size_t>(k)].real(), 1e-5);
      EXPECT_NEAR(y.data<float>()[(r * 4 + k) * 2 + 1], want[static_cast<size_t>(k)].imag(), 1e-5);
    }
  }
  // Truncation: dft_length 2 along axis 1 (negative axis -3 of rank 4) uses the first 2 samples.
  const Tensor t = run1("DFT", {x, Tensor::scalar<int64_t>(2)}, {{"axis", I(-3)}}, 17, true);
  ASSERT_EQ(t.shape(), (Shape{1, 2, 5, 2}));
  EXPECT_NEAR(t.data<float>()[0], x.data<float>()[0] + x.data<float>()[5], 1e-6);
  EXPECT_NEAR(t.data<float>()[10], x.data<float>()[0] - x.data<float>()[5], 1e-6);
  // Complex input cannot be onesided; the last axis is no signal axis.
  EXPECT_THROW(run1("DFT", {random_tensor({1, 4, 2}, 1)}, {{"onesided", I(1)}}), Error);
  EXPECT_THROW(run1("DFT", {random_tensor({1, 4, 2}, 1)}, {{"axis", I(2)}}), Error);
  const ops::OpDef* def = ops::find_op("", "DFT");
  EXPECT_NE(def->check(make_node("DFT", 1, 1, {{"onesided", I(1)}, {"inverse", I(1)}}), 17), "");
  EXPECT_NE(def->check(make_node("DFT", 1, 1), 20), "");
}

// ---------------- STFT ----------------
TEST(SignalStft, MatchesFramedNaiveDft) {
  const Tensor x = random_tensor({2, 20, 1}, 3), w = random_tensor({6}, 4);
  for (int64_t onesided : {0, 1}) {
    const Tensor y = run1("STFT", {x, Tensor::scalar<int64_t>(3), w}, {{"onesided", I(onesided)}}, 17, true);
    const int64_t bins = onesided ? 4 : 6, frames = (20 - 6) / 3 + 1;
    ASSERT_EQ(y.shape(), (Shape{2, frames, bins, 2}));
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t f = 0; f < frames; ++f) {
        std::vector<cd> frame;
        for (int64_t j = 0; j < 6; ++j) frame.emplace_back(x.data<float>()[b * 20 + f * 3 + j] * w.data<float>()[j], 0);
        const auto want = naive_dft(frame, 6, false);
        for (int64_t k = 0; k < bins; ++k) {
          const float* got = y.data<float>() + ((b * frames + f) * bins + k) * 2;
          EXPECT_NEAR(got[0], want[static_cast<size_t>(k)].real(), 1e-5);
          EXPECT_NEAR(got[1], want[static_cast<size_t>(k)].imag(), 1e-5);
        }
      }
  }
  // frame_length without a window = a rectangular window; a mismatching pair is an error.
  const Tensor ones = F(std::vector<float>(6, 1.f), {6});
  expect_close(run1("STFT", {x, Tensor::scalar<int64_t>(3), Tensor(), Tensor::scalar<int64_t>(6)}),
               run1("STFT", {x, Tensor::scalar<int64_t>(3), ones}), 1e-6);
  EXPECT_THROW(run1("STFT", {x, Tensor::scalar<int64_t>(3), ones, Tensor::scalar<int64_t>(5)}), Error);
  EXPECT_THROW(run1("STFT", {x, Tensor::scalar<int64_t>(3)}), Error);
}

// ---------------- windows and MelWeightMatrix ----------------
TEST(SignalWindow, HandValuesAndFormula) {
  expect_values(run1("HannWindow", {Tensor::scalar<int64_t>(4)}), {0, 0.5, 1, 0.5}, {4}, 1e-7);
  expect_values(run1("HannWindow", {Tensor::scalar<int32_t>(5)}, {{"periodic", I(0)}}), {0, 0.5, 1, 0.5, 0}, {5}, 1e-7);
  const Tensor h = run1("HammingWindow", {Tensor::scalar<int64_t>(7)}, {{"output_datatype", I(11)}});
  ASSERT_EQ(h.dtype(), DType::Float64);
  const Tensor b = run1("BlackmanWindow", {Tensor::scalar<int64_t>(7)}, {{"periodic", I(0)}});
  for (int64_t n = 0; n < 7; ++n) {
    const double a = 2 * std::numbers::pi * static_cast<double>(n);
    EXPECT_NEAR(h.data<double>()[n], 25.0 / 46 - 21.0 / 46 * std::cos(a / 7), 1e-12);
    EXPECT_NEAR(b.data<float>()[n], 0.42 - 0.5 * std::cos(a / 6) + 0.08 * std::cos(2 * a / 6), 1e-6);
  }
  EXPECT_EQ(run1("HannWindow", {Tensor::scalar<int64_t>(0)}).numel(), 0);
  EXPECT_THROW(run1("HannWindow", {Tensor::scalar<int64_t>(-1)}), Error);
  EXPECT_NE(ops::find_op("", "HannWindow")->check(make_node("HannWindow", 1, 1, {{"output_datatype", I(8)}}), 17), "");
}

TEST(SignalMel, HandComputedFilters) {
  // 2 mel bins, dft 16, 16 Hz, [0, 8] Hz: band edges fall in bins 0, 2, 4, 6.
  const Tensor w = run1("MelWeightMatrix", {Tensor::scalar<int64_t>(2), Tensor::scalar<int64_t>(16),
                                            Tensor::scalar<int64_t>(16), Tensor::scalar<float>(0), Tensor::scalar<float>(8)},
                        {}, 17, true);
  expect_values(w, {0, 0, 0.5, 0, 1, 0, 0.5, 0.5, 0, 1, 0, 0.5, 0, 0, 0, 0, 0, 0}, {9, 2});
  EXPECT_THROW(run1("MelWeightMatrix", {Tensor::scalar<int64_t>(2), Tensor::scalar<int64_t>(16), Tensor::scalar<int64_t>(16),
                                        Tensor::scalar<float>(0), Tensor::scalar<float>(40)}),
               Error);
}

// ---------------- MaxUnpool ----------------
TEST(SignalMaxUnpool, ScattersByIndexWithAndWithoutOutputShape) {
  Attrs a{{"kernel_shape", Attribute{Ints{2, 2}}}, {"strides", Attribute{Ints{2, 2}}}};
  const Tensor x = F({1, 2, 3, 4}, {1, 1, 2, 2}), idx = I64({5, 7, 13, 15}, {1, 1, 2, 2});
  expect_values(run1("MaxUnpool", {x, idx}, a), {0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4}, {1, 1, 4, 4});
  const Tensor y = run1("MaxUnpool", {x, idx, I64({1, 1, 5, 5}, {4})}, a, 11, true);
  expect_values(y, {0, 0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 4, 0, 0, 0, 0, 0, 0}, {1, 1, 5, 5});
  // 1-D with pads: (3 - 1) * 2 + 3 - 1 - 1 = 5 outputs.
  Attrs p{{"kernel_shape", Attribute{Ints{3}}}, {"strides", Attribute{Ints{2}}}, {"pads", Attribute{Ints{1, 1}}}};
  expect_values(run1("MaxUnpool", {F({7, 8, 9}, {1, 1, 3}), I64({0, 2, 4}, {1, 1, 3})}, p), {7, 0, 8, 0, 9}, {1, 1, 5});
  EXPECT_THROW(run1("MaxUnpool", {x, I64({5, 7, 13, 16}, {1, 1, 2, 2})}, a), Error);
  EXPECT_THROW(run1("MaxUnpool", {x, idx, I64({1, 1, 3, 5}, {4})}, a), Error);
}

// ---------------- Unique ----------------
std::vector<Tensor> unique(const Tensor& x, Attrs attrs) {
  return run_op(make_node("Unique", 1, 4, std::move(attrs)), {x}, 11);
}

TEST(SignalUnique, SortedAndUnsortedWithoutAxis) {
  const Tensor x = F({2, 1, 1, 3, 4, 3}, {6});
  auto s = unique(x, {});
  EXPECT_EQ(vals<float>(s[0]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(vals<int64_t>(s[1]), (std::vector<int64_t>{1, 0, 3, 4}));
  EXPECT_EQ(vals<int64_t>(s[2]), (std::vector<int64_t>{1, 0, 0, 2, 3, 2}));
  EXPECT_EQ(vals<int64_t>(s[3]), (std::vector<int64_t>{2, 1, 2, 1}));
  auto u = unique(x, {{"sorted", I(0)}});
  EXPECT_EQ(vals<float>(u[0]), (std::vector<float>{2, 1, 3, 4}));
  EXPECT_EQ(vals<int64_t>(u[1]), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(vals<int64_t>(u[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(vals<int64_t>(u[3]), (std::vector<int64_t>{1, 2, 2, 1}));
  // A 2-D input is flattened (ONNX's example 2).
  auto f = unique(F({1, 3, 2, 3}, {2, 2}), {});
  EXPECT_EQ(vals<float>(f[0]), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(vals<int64_t>(f[1]), (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(vals<int64_t>(f[2]), (std::vector<int64_t>{0, 2, 1, 2}));
}

TEST(SignalUnique, SlicesAlongAxis) {
  auto r = unique(F({1, 0, 0, 1, 0, 0, 2, 3, 4}, {3, 3}), {{"axis", I(0)}});
  EXPECT_EQ(r[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(vals<float>(r[0]), (std::vector<float>{1, 0, 0, 2, 3, 4}));
  EXPECT_EQ(vals<int64_t>(r[2]), (std::vector<int64_t>{0, 0, 1}));
  // Columns of [[1, 0, 0], [1, 0, 0], [2, 3, 3]]: (1,1,2), (0,0,3), (0,0,3) -> sorted (0,0,3), (1,1,2).
  auto c = unique(F({1, 0, 0, 1, 0, 0, 2, 3, 3}, {3, 3}), {{"axis", I(-1)}});
  EXPECT_EQ(c[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(vals<float>(c[0]), (std::vector<float>{0, 1, 0, 1, 3, 2}));
  EXPECT_EQ(vals<int64_t>(c[1]), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(vals<int64_t>(c[2]), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(vals<int64_t>(c[3]), (std::vector<int64_t>{2, 1}));
  auto i = unique(I64({5, 5, -1}, {3}), {{"sorted", I(0)}});
  EXPECT_EQ(vals<int64_t>(i[0]), (std::vector<int64_t>{5, -1}));
}

// ---------------- random ops ----------------
double mean_of(const Tensor& t) {
  double s = 0;
  for (int64_t i = 0; i < t.numel(); ++i) s += t.value_as_double(i);
  return s / static_cast<double>(t.numel());
}

TEST(SignalRandom, UniformRangeSeedAndReproducibility) {
  Attrs a{{"shape", Attribute{Ints{100, 50}}}, {"low", Fl(-2.f)}, {"high", Fl(3.f)}};
  const Tensor u = run1("RandomUniform", {}, a);
  ASSERT_EQ(u.dtype(), DType::Float32);
  ASSERT_EQ(u.shape(), (Shape{100, 50}));
  for (int64_t i = 0; i < u.numel(); ++i) ASSERT_TRUE(u.data<float>()[i] >= -2.f && u.data<float>()[i] < 3.f);
  EXPECT_NEAR(mean_of(u), 0.5, 0.1);
  EXPECT_EQ(vals<float>(run1("RandomUniform", {}, a)), vals<float>(u));  // deterministic default seed
  a["seed"] = Fl(1.f);
  const Tensor s1 = run1("RandomUniform", {}, a);
  EXPECT_NE(vals<float>(s1), vals<float>(u));
  EXPECT_EQ(vals<float>(run1("RandomUniform", {}, a)), vals<float>(s1));
  // *Like: the input's shape and dtype unless `dtype` says otherwise.
  const Tensor l = run1("RandomUniformLike", {Tensor(DType::Float64, {3, 4})});
  EXPECT_EQ(l.dtype(), DType::Float64);
  EXPECT_EQ(l.shape(), (Shape{3, 4}));
  EXPECT_EQ(run1("RandomUniformLike", {Tensor(DType::Float64, {3})}, {{"dtype", I(1)}}).dtype(), DType::Float32);
  EXPECT_THROW(run1("RandomUniformLike", {Tensor(DType::Int32, {3})}), Error);
}

TEST(SignalRandom, NormalMoments) {
  const Tensor n = run1("RandomNormal", {}, {{"shape", Attribute{Ints{40000}}}, {"mean", Fl(3.f)}, {"scale", Fl(2.f)}, {"dtype", I(11)}});
  ASSERT_EQ(n.dtype(), DType::Float64);
  const double m = mean_of(n);
  double var = 0;
  for (int64_t i = 0; i < n.numel(); ++i) var += (n.data<double>()[i] - m) * (n.data<double>()[i] - m);
  var /= static_cast<double>(n.numel());
  EXPECT_NEAR(m, 3.0, 0.05);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.05);
  EXPECT_EQ(run1("RandomNormalLike", {Tensor(DType::Float32, {2, 2})}).shape(), (Shape{2, 2}));
}

TEST(SignalRandom, BernoulliValuesAndRate) {
  Tensor p(DType::Float32, {20000});
  for (int64_t i = 0; i < p.numel(); ++i) p.data<float>()[i] = i < 1000 ? 0.f : i < 2000 ? 1.f : 0.3f;
  const Tensor y = run1("Bernoulli", {p});
  ASSERT_EQ(y.dtype(), DType::Float32);
  double ones = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const float v = y.data<float>()[i];
    ASSERT_TRUE(v == 0.f || v == 1.f);
    if (i < 1000) EXPECT_EQ(v, 0.f);
    else if (i < 2000) EXPECT_EQ(v, 1.f);
    else ones += v;
  }
  EXPECT_NEAR(ones / 18000, 0.3, 0.02);
  EXPECT_EQ(run1("Bernoulli", {p}, {{"dtype", I(9)}}).dtype(), DType::Bool);
  EXPECT_THROW(run1("Bernoulli", {F({1.5f}, {1})}), Error);
}

TEST(SignalRandom, TrainingDropout) {
  const Tensor x = random_tensor({10000}, 9, 0.5f, 1.f);
  auto n = make_node("Dropout", 3, 2, {{"seed", I(5)}});
  auto out = run_op(n, {x, Tensor::scalar<float>(0.25f), Tensor::scalar<bool>(true)}, 13);
  double kept = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float y = out[0].data<float>()[i];
    const bool m = out[1].data<bool>()[i];
    ASSERT_NEAR(m ? x.data<float>()[i] / 0.75f : 0.f, y, 1e-6) << i;
    kept += m;
  }
  EXPECT_NEAR(kept / 10000, 0.75, 0.02);
  auto again = run_op(n, {x, Tensor::scalar<float>(0.25f), Tensor::scalar<bool>(true)}, 13);
  EXPECT_EQ(vals<float>(again[0]), vals<float>(out[0]));
  // Ratio 0 keeps everything; a ratio of 1 is refused.
  auto zero = run_op(n, {x, Tensor::scalar<float>(0.f), Tensor::scalar<bool>(true)}, 13);
  EXPECT_EQ(vals<float>(zero[0]), vals<float>(x));
  EXPECT_THROW(run_op(n, {x, Tensor::scalar<float>(1.f), Tensor::scalar<bool>(true)}, 13), Error);
}

// ---------------- optimizers ----------------
std::vector<Tensor> optimize(const std::string& op, size_t n_in, size_t n_out, Attrs attrs, const std::vector<Tensor>& in) {
  auto node = make_node(op, n_in, n_out, std::move(attrs));
  node.domain = "ai.onnx.preview.training";
  return run_op(node, in, 1);
}

TEST(SignalOptimizer, AdagradHandValues) {
  // r = 0.1 / (1 + 2 * 0.5) = 0.05; g = 0.1 * 1 + 2 = 2.1; H' = 0.59 + 4.41 = 5; X' = 1 - 0.05 * 2.1 / sqrt(5).
  auto out = optimize("Adagrad", 5, 2, {{"decay_factor", Fl(0.5f)}, {"norm_coefficient", Fl(0.1f)}, {"epsilon", Fl(0.f)}},
                      {Tensor::scalar<float>(0.1f), Tensor::scalar<int64_t>(2), F({1}, {1}), F({2}, {1}), F({0.59f}, {1})});
  expect_values(out[0], {static_cast<float>(1 - 0.05 * 2.1 / std::sqrt(5.0))}, {1});
  expect_values(out[1], {5}, {1});
}

TEST(SignalOptimizer, MomentumStandardNesterovAndMultiple) {
  Attrs a{{"alpha", Fl(0.5f)}, {"beta", Fl(0.25f)}, {"norm_coefficient", Fl(0.f)}, {"mode", Attribute{std::string("standard")}}};
  // Two tensors: V' = 0.5 V + 0.25 G, X' = X - R V' with R = 2.
  auto out = optimize("Momentum", 8, 4, a,
                      {Tensor::scalar<float>(2.f), Tensor::scalar<int64_t>(1), F({1}, {1}), F({1, 2}, {2}), F({4}, {1}),
                       F({8, 0}, {2}), F({2}, {1}), F({0, 4}, {2})});
  expect_values(out[0], {1 - 2 * 2}, {1});          // V' = 1 + 1 = 2
  expect_values(out[1], {1 - 2 * 2, 2 - 2 * 2}, {2});  // V' = (0 + 2, 2 + 0)
  expect_values(out[2], {2}, {1});
  expect_values(out[3], {2, 2}, {2});
  // T = 0: beta counts as 1; nesterov: X' = X - R (G + alpha V').
  a["mode"] = Attribute{std::string("nesterov")};
  out = optimize("Momentum", 5, 2, a, {Tensor::scalar<float>(2.f), Tensor::scalar<int64_t>(0), F({1}, {1}), F({4}, {1}), F({2}, {1})});
  expect_values(out[1], {5}, {1});  // 0.5 * 2 + 4
  expect_values(out[0], {1 - 2 * (4 + 0.5f * 5)}, {1});
  a["mode"] = Attribute{std::string("heavy")};
  EXPECT_NE(ops::find_op("ai.onnx.preview.training", "Momentum")->check(make_node("Momentum", 5, 2, a), 1), "");
}

TEST(SignalOptimizer, AdamHandValues) {
  // alpha 0.5, beta 0.75, T = 1: V' = 0.5 * 2 + 0.5 * 4 = 3, H' = 0.75 * 4 + 0.25 * 16 = 7,
  // R' = 1 * sqrt(0.25) / 0.5 = 1, X' = (1 - 0.5) (10 - 3 / sqrt 7).
  auto out = optimize("Adam", 6, 3,
                      {{"alpha", Fl(0.5f)}, {"beta", Fl(0.75f)}, {"epsilon", Fl(0.f)}, {"norm_coefficient_post", Fl(0.5f)}},
                      {Tensor::scalar<float>(1.f), Tensor::scalar<int64_t>(1), F({10}, {1}), F({4}, {1}), F({2}, {1}), F({4}, {1})});
  expect_values(out[0], {static_cast<float>(0.5 * (10 - 3 / std::sqrt(7.0)))}, {1});
  expect_values(out[1], {3}, {1});
  expect_values(out[2], {7}, {1});
  EXPECT_NE(ops::find_op("ai.onnx.preview.training", "Adam")->check(make_node("Adam", 7, 3), 1), "");
}

}  // namespace
