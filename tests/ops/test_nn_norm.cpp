// BatchNormalization, InstanceNormalization, LayerNormalization, LRN,
// MeanVarianceNormalization.
#include <cmath>

#include "ops/test_nn_util.h"

namespace joule::testing::nn {
namespace {

TEST(NnBatchNorm, Inference) {
  Tensor x = F({-1, 0, 1, 2, 3, 4}, {1, 2, 1, 3});
  Tensor scale = F({1, 1.5f}, {2}), bias = F({0, 1}, {2}), mean = F({0, 3}, {2}),
         var = F({1, 1.5f}, {2});
  const double e = 1e-5, a0 = 1 / std::sqrt(1 + e), a1 = 1.5 / std::sqrt(1.5 + e);
  const std::vector<float> want = {static_cast<float>(-a0),    0, static_cast<float>(a0),
                                   static_cast<float>(1 - a1), 1, static_cast<float>(1 + a1)};
  expect_values(run1("BatchNormalization", {x, scale, bias, mean, var}), want, {1, 2, 1, 3});
  // epsilon attribute, rank 2 input, opset 9
  Tensor y = run1("BatchNormalization", {F({4, 4}, {1, 2}), scale, bias, mean, var},
                  {{"epsilon", 0.5f}}, 9);
  expect_values(
      y, {static_cast<float>(4 / std::sqrt(1.5)), static_cast<float>(1 + 1.5 / std::sqrt(2.0))},
      {1, 2});
}

TEST(NnBatchNorm, MixedParameterTypesOpset15AndDouble) {
  Tensor x = F({1, 2}, {1, 2});
  Tensor one = F({1, 1}, {2}), zero = F({0, 0}, {2});
  Tensor mean = Tensor::from_vector<double>({1, 1}, {2}),
         var = Tensor::from_vector<double>({4, 4}, {2});
  Tensor y = run1("BatchNormalization", {x, one, zero, mean, var}, {{"epsilon", 0.f}}, 15);
  expect_values(y, {0, 0.5f}, {1, 2});
  Tensor yd =
      run1("BatchNormalization",
           {x.cast(DType::Float64), one.cast(DType::Float64), zero.cast(DType::Float64), mean, var},
           {{"epsilon", 0.f}});
  EXPECT_EQ(yd.dtype(), DType::Float64);
  expect_values(yd, {0, 0.5f}, {1, 2});
}

TEST(NnBatchNorm, TrainingModeUsesBatchStatistics) {
  // X [N=2, C=1, 2]: the channel's batch mean 2.5 and biased variance 1.25 normalise it; the
  // running statistics move by (1 - momentum) towards them (ONNX's convention, variance biased).
  Tensor x = F({1, 2, 3, 4}, {2, 1, 2}), s = F({2}, {1}), b = F({0.5f}, {1}), m = F({1}, {1}), v = F({3}, {1});
  auto node = make_node("BatchNormalization", 5, 3);
  node.attrs = {{"training_mode", int64_t{1}}, {"momentum", 0.75f}, {"epsilon", 0.f}};
  const std::vector<Tensor> out = run_op(node, {x, s, b, m, v});
  const double inv = 1 / std::sqrt(1.25);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(out[0].data<float>()[i], (i + 1 - 2.5) * inv * 2 + 0.5, 1e-5);
  EXPECT_NEAR(out[1].data<float>()[0], 0.75 * 1 + 0.25 * 2.5, 1e-6);
  EXPECT_NEAR(out[2].data<float>()[0], 0.75 * 3 + 0.25 * 1.25, 1e-6);
  // Before opset 14 (five outputs, other semantics) it stays unsupported.
  const ops::OpDef* def = ops::find_op("", "BatchNormalization");
  ASSERT_NE(def->check, nullptr);
  EXPECT_NE(def->check(node, 9), "");
  EXPECT_NE(def->check(make_node("BatchNormalization", 5, 5), 15), "");
  EXPECT_NE(def->check(make_node("BatchNormalization", 5, 3), 15), "");  // statistics outputs need training mode
  EXPECT_EQ(def->check(node, 15), "");
  EXPECT_EQ(def->check(make_node("BatchNormalization", 5, 1), 15), "");
}

TEST(NnBatchNorm, Errors) {
  Tensor p = F({1, 1}, {2});
  EXPECT_THROW(run1("BatchNormalization", {F({1, 2, 3}, {1, 3}), p, p, p, p}), Error);
  EXPECT_THROW(run1("BatchNormalization", {F({1}, {1}), p, p, p, p}), Error);
  EXPECT_THROW(run1("BatchNormalization", {F({1, 2}, {1, 2}).cast(DType::Int32), p, p, p, p}),
               Error);
}

TEST(NnInstanceNorm, Basic) {
  Tensor x = F({1, 3, 2, 2, 0, 4, 6, 2}, {2, 2, 2});
  Tensor s = F({2, 1}, {2}), b = F({0.5f, -1}, {2});
  const float a = static_cast<float>(2 / std::sqrt(1 + 1e-5)),
              c = static_cast<float>(2 / std::sqrt(4 + 1e-5));
  // planes: [1,3] (mean 2, var 1), [2,2] (var 0), [0,4] (mean 2, var 4), [6,2] (mean 4, var 4)
  expect_values(run1("InstanceNormalization", {x, s, b}),
                {0.5f - a, 0.5f + a, -1, -1, 0.5f - 2 * c, 0.5f + 2 * c, -1 + c, -1 - c},
                {2, 2, 2});
  EXPECT_THROW(run1("InstanceNormalization", {x, F({1}, {1}), b}), Error);
}

TEST(NnLayerNorm, LastAxisWithStatistics) {
  Tensor x = F({1, 2, 3, 2, 4, 6}, {2, 3});
  Tensor scale = F({1, 2, 1}, {3}), bias = F({0, 0, 1}, {3});
  auto node = make_node("LayerNormalization", 3, 3);
  auto out = run_op(node, {x, scale, bias});
  const double i0 = 1 / std::sqrt(2.0 / 3 + 1e-5), i1 = 1 / std::sqrt(8.0 / 3 + 1e-5);
  expect_values(out[0],
                {static_cast<float>(-i0), 0, static_cast<float>(i0 + 1),
                 static_cast<float>(-2 * i1), 0, static_cast<float>(2 * i1 + 1)},
                {2, 3});
  ASSERT_EQ(out[1].dtype(), DType::Float32);
  expect_values(out[1], {2, 4}, {2, 1});
  expect_values(out[2], {static_cast<float>(i0), static_cast<float>(i1)}, {2, 1});
}

TEST(NnLayerNorm, AxisZeroNoBiasBroadcastScaleStash) {
  Tensor x = F({1, 2, 3, 4}, {2, 2});
  // normalise all 4 elements; scalar-like scale [1] broadcast over [2,2]
  Tensor y = run1("LayerNormalization", {x, F({2}, {1})}, {{"axis", int64_t{0}}, {"epsilon", 0.f}});
  const float s = static_cast<float>(2 / std::sqrt(1.25));
  expect_values(y, {-1.5f * s, -0.5f * s, 0.5f * s, 1.5f * s}, {2, 2});
  // stash_type double: statistics in float64
  auto node =
      make_node("LayerNormalization", 2, 2, {{"stash_type", int64_t{11}}, {"axis", int64_t{-2}}});
  auto out = run_op(node, {x, F({1, 1}, {2})});
  EXPECT_EQ(out[1].dtype(), DType::Float64);
  EXPECT_EQ(shape_str(out[1].shape()), "[1,1]");
  EXPECT_DOUBLE_EQ(out[1].data<double>()[0], 2.5);
}

TEST(NnLayerNorm, HalfAndErrors) {
  Tensor x = F({1, 3}, {1, 2}).cast(DType::Float16);
  Tensor y =
      run1("LayerNormalization", {x, F({1, 1}, {2}).cast(DType::Float16)}, {{"epsilon", 0.f}});
  EXPECT_EQ(y.dtype(), DType::Float16);
  expect_values(y, {-1, 1}, {1, 2}, 1e-3);
  EXPECT_THROW(run1("LayerNormalization", {F({1, 2}, {1, 2}), F({1, 2, 3}, {3})}), Error);
  EXPECT_THROW(
      run1("LayerNormalization", {F({1, 2}, {1, 2}), F({1, 2}, {2})}, {{"axis", int64_t{2}}}),
      Error);
  EXPECT_THROW(
      run1("LayerNormalization", {F({1, 2}, {1, 2}), F({1, 2}, {2})}, {{"stash_type", int64_t{7}}}),
      Error);
}

TEST(NnLRN, SizesOddAndEven) {
  Tensor x = F({1, 2, 3}, {1, 3, 1, 1});
  Attrs a{{"size", int64_t{3}}, {"alpha", 3.f}, {"beta", 1.f}, {"bias", 1.f}};
  expect_values(run1("LRN", {x}, a), {1.f / 6, 2.f / 15, 3.f / 14}, {1, 3, 1, 1});
  a["size"] = int64_t{2};
  a["alpha"] = 2.f;
  expect_values(run1("LRN", {x}, a), {1.f / 6, 2.f / 14, 3.f / 10}, {1, 3, 1, 1});
  // default alpha/beta/bias
  const float d = static_cast<float>(std::pow(1 + 1e-4 / 3 * 5, 0.75));
  EXPECT_NEAR(values(run1("LRN", {x}, {{"size", int64_t{3}}}))[0], 1 / d, 1e-6);
  EXPECT_THROW(run1("LRN", {x}), Error);  // size is required
}

TEST(NnMVN, DefaultAndCustomAxes) {
  Tensor x = F({1, 3, 2, 2}, {1, 2, 1, 2});
  // channel 0: [1,3] -> [-1,1]; channel 1: [2,2] -> 0 / (0 + 1e-9)
  expect_values(run1("MeanVarianceNormalization", {x}), {-1, 1, 0, 0}, {1, 2, 1, 2});
  // over the channel axis: (1,2) and (3,2)
  expect_values(run1("MeanVarianceNormalization", {x}, {{"axes", Ints{1}}}), {-1, 1, 1, -1},
                {1, 2, 1, 2});
  EXPECT_THROW(run1("MeanVarianceNormalization", {F({1, 2}, {2})}), Error);
}

TEST(NnNorm, Costs) {
  auto node = make_node("LayerNormalization", 2, 1);
  const ops::OpDef* def = ops::find_op("", "LayerNormalization");
  ops::CostContext cc{
      node, {{2, 8}, {8}}, {{2, 8}}, {DType::Float32, DType::Float32}, {DType::Float32}};
  const ops::Cost c = ops::node_cost(*def, cc);
  EXPECT_GT(c.flops, 16);
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (16 + 8 + 16));
}

}  // namespace
}  // namespace joule::testing::nn
