// MaxPool, AveragePool, LpPool, GlobalAveragePool/GlobalMaxPool/GlobalLpPool: hand-computed
// cases (padding, ceil_mode, count_include_pad, dilations, Indices) and randomised
// comparisons against a naive per-output loop.
#include <limits>
#include <random>

#include "ops/test_nn_util.h"

namespace joule::testing::nn {
namespace {

Tensor seq(Shape s) {
  Tensor t(DType::Float32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i + 1);
  return t;
}

TEST(NnMaxPool, PadsKeepSize) {
  // ONNX maxpool_2d_pads: 5x5 of 1..25, kernel 5, pads 2
  Tensor y = run1("MaxPool", {seq({1, 1, 5, 5})},
                  {{"kernel_shape", Ints{5, 5}}, {"pads", Ints{2, 2, 2, 2}}});
  expect_values(y, {13, 14, 15, 15, 15, 18, 19, 20, 20, 20, 23, 24, 25,
                    25, 25, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25},
                {1, 1, 5, 5});
}

TEST(NnMaxPool, PaddingNeverWinsAgainstNegatives) {
  Tensor x = F({-5, -3, -4, -1}, {1, 1, 4});
  Tensor y = run1("MaxPool", {x}, {{"kernel_shape", Ints{2}}, {"pads", Ints{1, 1}}});
  expect_values(y, {-5, -3, -3, -1, -1}, {1, 1, 5});
}

TEST(NnMaxPool, CeilModeAndDilations) {
  // ONNX maxpool_2d_ceil: 4x4 of 1..16, kernel 3, stride 2 -> [[11,12],[15,16]]
  expect_values(
      run1("MaxPool", {seq({1, 1, 4, 4})},
           {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}}),
      {11, 12, 15, 16}, {1, 1, 2, 2});
  // without ceil_mode only one window fits
  expect_values(
      run1("MaxPool", {seq({1, 1, 4, 4})}, {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}}),
      {11}, {1, 1, 1, 1});
  // ONNX maxpool_2d_dilations: kernel 2, dilation 2
  expect_values(run1("MaxPool", {seq({1, 1, 4, 4})},
                     {{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 2}}}),
                {11, 12, 15, 16}, {1, 1, 2, 2});
}

TEST(NnMaxPool, CeilModeDropsWindowsStartingInPadding) {
  // in 5, k 1, s 2, end pad 1: ceil gives 4 windows, the 4th would start at 6 = past the
  // padded input, so it is dropped.
  Tensor y = run1("MaxPool", {seq({1, 1, 5})},
                  {{"kernel_shape", Ints{1}},
                   {"strides", Ints{2}},
                   {"pads", Ints{0, 1}},
                   {"ceil_mode", int64_t{1}}});
  expect_values(y, {1, 3, 5}, {1, 1, 3});
}

TEST(NnMaxPool, IndicesRowAndColumnMajor) {
  // ONNX maxpool_with_argmax_2d_precomputed_strides: 5x5, k2 s2, storage_order 1
  auto node = make_node(
      "MaxPool", 1, 2,
      {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"storage_order", int64_t{1}}});
  auto out = run_op(node, {seq({1, 1, 5, 5})});
  expect_values(out[0], {7, 9, 17, 19}, {1, 1, 2, 2});
  ASSERT_EQ(out[1].dtype(), DType::Int64);
  EXPECT_EQ((std::vector<int64_t>(out[1].data<int64_t>(), out[1].data<int64_t>() + 4)),
            (Ints{6, 16, 8, 18}));
  // row-major with 2 channels: channel offset included
  auto node2 = make_node("MaxPool", 1, 2, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  auto out2 = run_op(node2, {seq({1, 2, 5, 5})});
  EXPECT_EQ((std::vector<int64_t>(out2[1].data<int64_t>(), out2[1].data<int64_t>() + 8)),
            (Ints{6, 8, 16, 18, 31, 33, 41, 43}));
}

TEST(NnMaxPool, IntegerDtypesAndHalf) {
  Tensor x = Tensor::from_vector<uint8_t>({1, 200, 3, 4}, {1, 1, 4});
  Tensor y = run1("MaxPool", {x}, {{"kernel_shape", Ints{2}}});
  ASSERT_EQ(y.dtype(), DType::UInt8);
  EXPECT_EQ((std::vector<uint8_t>(y.data<uint8_t>(), y.data<uint8_t>() + 3)),
            (std::vector<uint8_t>{200, 200, 4}));
  Tensor xi = Tensor::from_vector<int8_t>({-1, -7, 3, -4}, {1, 1, 4});
  Tensor yi = run1("MaxPool", {xi}, {{"kernel_shape", Ints{2}}, {"strides", Ints{2}}});
  EXPECT_EQ(yi.data<int8_t>()[0], -1);
  EXPECT_EQ(yi.data<int8_t>()[1], 3);
  Tensor yh = run1("MaxPool", {seq({1, 1, 4}).cast(DType::Float16)}, {{"kernel_shape", Ints{2}}});
  EXPECT_EQ(yh.dtype(), DType::Float16);
  expect_values(yh, {2, 3, 4}, {1, 1, 3});
}

TEST(NnMaxPool, Errors) {
  EXPECT_THROW(run1("MaxPool", {seq({1, 1, 4, 4})}), Error);  // no kernel_shape
  EXPECT_THROW(run1("MaxPool", {seq({1, 1, 4, 4})}, {{"kernel_shape", Ints{2}}}), Error);
  EXPECT_THROW(run1("MaxPool", {seq({1, 1, 4, 4})}, {{"kernel_shape", Ints{5, 5}}}), Error);
  EXPECT_THROW(run1("MaxPool", {seq({4, 4})}, {{"kernel_shape", Ints{2}}}), Error);
  EXPECT_THROW(
      run1("MaxPool", {seq({1, 1, 4})}, {{"kernel_shape", Ints{2}}, {"storage_order", int64_t{2}}}),
      Error);
  // dilations only from opset 10
  EXPECT_THROW(
      run1("MaxPool", {seq({1, 1, 4})}, {{"kernel_shape", Ints{2}}, {"dilations", Ints{2}}}, 8),
      Error);
}

TEST(NnAveragePool, PadsIncludeExclude) {
  Tensor x = F({1, 2, 3, 4}, {1, 1, 4});
  Attrs a{{"kernel_shape", Ints{3}}, {"pads", Ints{1, 1}}};
  expect_values(run1("AveragePool", {x}, a), {1.5f, 2, 3, 3.5f}, {1, 1, 4});
  a["count_include_pad"] = int64_t{1};
  expect_values(run1("AveragePool", {x}, a), {1, 2, 3, 7.f / 3}, {1, 1, 4});
}

TEST(NnAveragePool, CeilModePartialWindow) {
  Tensor x = seq({1, 1, 5});
  Attrs a{{"kernel_shape", Ints{2}}, {"strides", Ints{2}}, {"ceil_mode", int64_t{1}}};
  expect_values(run1("AveragePool", {x}, a), {1.5f, 3.5f, 5}, {1, 1, 3});
  // cells past the padded input are never counted, even with count_include_pad
  a["count_include_pad"] = int64_t{1};
  expect_values(run1("AveragePool", {x}, a), {1.5f, 3.5f, 5}, {1, 1, 3});
  // with an end pad the padded cell counts
  a["pads"] = Ints{0, 1};
  expect_values(run1("AveragePool", {seq({1, 1, 4})}, a), {1.5f, 3.5f}, {1, 1, 2});
  expect_values(run1("AveragePool", {seq({1, 1, 5})}, a), {1.5f, 3.5f, 2.5f}, {1, 1, 3});
}

TEST(NnAveragePool, SameUpperLower2D) {
  // ONNX averagepool_2d_same_upper/lower on a 2x2 kernel over 3x3 (1..9): total pad 1
  Tensor x = seq({1, 1, 3, 3});
  Attrs a{{"kernel_shape", Ints{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}};
  expect_values(run1("AveragePool", {x}, a), {3, 4, 4.5f, 6, 7, 7.5f, 7.5f, 8.5f, 9}, {1, 1, 3, 3});
  a["auto_pad"] = std::string("SAME_LOWER");
  expect_values(run1("AveragePool", {x}, a), {1, 1.5f, 2.5f, 2.5f, 3, 4, 5.5f, 6, 7}, {1, 1, 3, 3});
}

TEST(NnLpPool, Basic) {
  Tensor x = F({3, 4, 0, -12, 5}, {1, 1, 5});
  expect_values(run1("LpPool", {x}, {{"kernel_shape", Ints{2}}, {"strides", Ints{2}}}), {5, 12},
                {1, 1, 2});
  expect_values(
      run1("LpPool", {x}, {{"kernel_shape", Ints{2}}, {"strides", Ints{2}}, {"p", int64_t{1}}}),
      {7, 12}, {1, 1, 2});
}

TEST(NnGlobalPool, AvgMaxLp) {
  Tensor x = F({1, 2, 3, 4, -1, -2, -3, -4}, {1, 2, 2, 2});
  expect_values(run1("GlobalAveragePool", {x}), {2.5f, -2.5f}, {1, 2, 1, 1});
  expect_values(run1("GlobalMaxPool", {x}), {4, -1}, {1, 2, 1, 1});
  expect_values(run1("GlobalLpPool", {x}), {std::sqrt(30.f), std::sqrt(30.f)}, {1, 2, 1, 1});
  expect_values(run1("GlobalAveragePool", {F({1, 2, 3}, {1, 1, 3})}), {2}, {1, 1, 1});
  Tensor d = run1("GlobalAveragePool", {x.cast(DType::Float64)});
  EXPECT_EQ(d.dtype(), DType::Float64);
  EXPECT_THROW(run1("GlobalAveragePool", {F({1}, {1})}), Error);
  EXPECT_THROW(run1("GlobalMaxPool", {x.cast(DType::Int32)}), Error);
}

TEST(NnPool, InferSymbolic) {
  const ops::OpDef* def = ops::find_op("", "MaxPool");
  auto node = make_node(
      "MaxPool", 1, 2,
      {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  ir::TensorType x;
  x.dtype = DType::Float32;
  x.has_shape = true;
  x.dims = {ir::Dim{-1, "N"}, ir::Dim{64, ""}, ir::Dim{112, ""}, ir::Dim{-1, "W"}};
  ops::InferContext ic{node, 17, {&x}, {nullptr}, {}, {}};
  ic.output_types.resize(2);
  def->infer(ic);
  const auto& o = ic.output_types[0];
  ASSERT_EQ(o.dims.size(), 4u);
  EXPECT_EQ(o.dims[0].param, "N");
  EXPECT_EQ(o.dims[2].value, 56);
  EXPECT_FALSE(o.dims[3].is_static());
  EXPECT_EQ(ic.output_types[1].dtype, DType::Int64);
}

// ---- randomised comparison against a naive loop ----

enum class PoolKind { Max, Avg };

struct PoolCase {
  int nsp;
  Ints in, k, s, d, pb, pe, out;
  bool include_pad;
};

Tensor naive_pool(const Tensor& x, const PoolCase& p, PoolKind kind) {
  const int64_t planes = x.dim(0) * x.dim(1);
  Shape ys = {x.dim(0), x.dim(1)};
  for (int i = 0; i < p.nsp; ++i) ys.push_back(p.out[i]);
  Tensor y(DType::Float32, ys);
  const int64_t isz = shape_numel(p.in), osz = shape_numel(p.out), ksz = shape_numel(p.k);
  for (int64_t t = 0; t < planes; ++t)
    for (int64_t o = 0; o < osz; ++o) {
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t valid = 0, padded = 0;
      for (int64_t kk = 0; kk < ksz; ++kk) {
        int64_t ro = o, rk = kk, off = 0, mul = 1;
        bool inside = true, in_padded = true;
        for (int64_t d = p.nsp - 1; d >= 0; --d) {
          const int64_t op = ro % p.out[d], kp = rk % p.k[d];
          ro /= p.out[d], rk /= p.k[d];
          const int64_t pos = op * p.s[d] + kp * p.d[d] - p.pb[d];
          if (pos < 0 || pos >= p.in[d]) inside = false;
          if (pos < -p.pb[d] || pos >= p.in[d] + p.pe[d]) in_padded = false;
          off += pos * mul;
          mul *= p.in[d];
        }
        if (in_padded) ++padded;
        if (!inside) continue;
        ++valid;
        const double v = x.data<float>()[t * isz + off];
        best = std::max(best, v);
        sum += v;
      }
      y.data<float>()[t * osz + o] = static_cast<float>(
          kind == PoolKind::Max ? best : sum / static_cast<double>(p.include_pad ? padded : valid));
    }
  return y;
}

void random_pools(PoolKind kind, uint32_t seed) {
  std::mt19937 rng(seed);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* pads[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
  for (int iter = 0; iter < 200; ++iter) {
    PoolCase p;
    p.nsp = ri(1, 3);
    p.include_pad = ri(0, 1);
    const std::string ap = pads[ri(0, 3)];
    const bool ceil = ap == "NOTSET" && ri(0, 1);
    Ints pd(2 * p.nsp);
    for (int i = 0; i < p.nsp; ++i) {
      const int64_t k = ri(1, 4), s = ri(1, 3), d = kind == PoolKind::Max ? ri(1, 2) : 1;
      // Up to 46 wide in 1-D/2-D: the vectorised rows of MaxPool's fast path run full vectors.
      const int64_t ek = (k - 1) * d + 1, in = ek + ri(0, p.nsp <= 2 ? 40 : 6);
      int64_t pb = std::min<int64_t>(ri(0, 2), k - 1), pe = std::min<int64_t>(ri(0, 2), k - 1);
      pd[i] = pb, pd[p.nsp + i] = pe;
      p.k.push_back(k), p.s.push_back(s), p.d.push_back(d), p.in.push_back(in);
      int64_t out;
      if (ap == "NOTSET") {
        const int64_t span = in + pb + pe - ek;
        out = ceil ? (span + s - 1) / s + 1 : span / s + 1;
        if (ceil && (out - 1) * s >= in + pb) --out;
      } else if (ap == "VALID") {
        pb = pe = 0;
        out = (in - ek) / s + 1;
      } else {
        out = (in + s - 1) / s;
        const int64_t total = std::max<int64_t>(0, (out - 1) * s + ek - in);
        pb = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
        pe = total - pb;
      }
      p.pb.push_back(pb), p.pe.push_back(pe), p.out.push_back(out);
    }
    Attrs a{{"kernel_shape", p.k}, {"strides", p.s}};
    if (kind == PoolKind::Max)
      a["dilations"] = p.d;
    else
      a["count_include_pad"] = int64_t{p.include_pad};
    if (ap != "NOTSET")
      a["auto_pad"] = ap;
    else
      a["pads"] = pd;
    if (ceil) a["ceil_mode"] = int64_t{1};
    Shape xs = {ri(1, 2), ri(1, 3)};
    for (int64_t v : p.in) xs.push_back(v);
    Tensor x = random_tensor(xs, seed + static_cast<uint32_t>(iter));
    Tensor y = run1(kind == PoolKind::Max ? "MaxPool" : "AveragePool", {x}, a);
    expect_close(y, naive_pool(x, p, kind), 1e-5, 1e-5, "iter " + std::to_string(iter) + " " + ap);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(NnMaxPool, RandomVsNaive) { random_pools(PoolKind::Max, 11); }
TEST(NnAveragePool, RandomVsNaive) { random_pools(PoolKind::Avg, 22); }

}  // namespace
}  // namespace joule::testing::nn
