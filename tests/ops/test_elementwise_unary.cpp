// Unary math ops, activations, Clip, PRelu.
#include "ops/test_elementwise_util.h"

namespace joule {
namespace {

using namespace joule::elemtest;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

void expect_near(const Tensor& got, const std::vector<float>& want, float tol = 1e-6f) {
  ASSERT_EQ(got.dtype(), DType::Float32);
  ASSERT_EQ(static_cast<size_t>(got.numel()), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const float g = got.data<float>()[i];
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(g)) << "element " << i;
    else if (std::isinf(want[i]))
      EXPECT_EQ(g, want[i]) << "element " << i;
    else
      EXPECT_NEAR(g, want[i], tol * std::max(1.f, std::fabs(want[i]))) << "element " << i;
  }
}

Tensor unary(const std::string& op, const Tensor& x,
             std::map<std::string, ir::Attribute> attrs = {}, int64_t opset = 17) {
  return run_op(make_node(op, 1, 1, std::move(attrs)), {x}, opset)[0];
}

// Each float op against the C library on a few values in its domain.
TEST(ElemUnary, FloatTableMatchesLibm) {
  struct Case {
    const char* op;
    double (*f)(double);
    std::vector<float> in;
  };
  const std::vector<Case> cases = {
      {"Sqrt", [](double v) { return std::sqrt(v); }, {0.f, 1.f, 2.f, 9.f}},
      {"Exp", [](double v) { return std::exp(v); }, {-2.f, 0.f, 1.f, 3.5f}},
      {"Log", [](double v) { return std::log(v); }, {0.5f, 1.f, 2.f, 100.f}},
      {"Reciprocal", [](double v) { return 1.0 / v; }, {-4.f, 0.5f, 2.f, 3.f}},
      {"Sin", [](double v) { return std::sin(v); }, {-1.f, 0.f, 0.5f, 3.f}},
      {"Cos", [](double v) { return std::cos(v); }, {-1.f, 0.f, 0.5f, 3.f}},
      {"Tan", [](double v) { return std::tan(v); }, {-1.f, 0.f, 0.5f, 1.f}},
      {"Asin", [](double v) { return std::asin(v); }, {-1.f, 0.f, 0.5f, 0.9f}},
      {"Acos", [](double v) { return std::acos(v); }, {-1.f, 0.f, 0.5f, 0.9f}},
      {"Atan", [](double v) { return std::atan(v); }, {-10.f, 0.f, 0.5f, 2.f}},
      {"Sinh", [](double v) { return std::sinh(v); }, {-2.f, 0.f, 0.5f, 2.f}},
      {"Cosh", [](double v) { return std::cosh(v); }, {-2.f, 0.f, 0.5f, 2.f}},
      {"Asinh", [](double v) { return std::asinh(v); }, {-2.f, 0.f, 0.5f, 2.f}},
      {"Acosh", [](double v) { return std::acosh(v); }, {1.f, 1.5f, 2.f, 10.f}},
      {"Atanh", [](double v) { return std::atanh(v); }, {-0.9f, 0.f, 0.5f, 0.75f}},
      {"Erf", [](double v) { return std::erf(v); }, {-2.f, 0.f, 0.3f, 1.f}},
      {"Tanh", [](double v) { return std::tanh(v); }, {-20.f, -0.5f, 0.f, 3.f}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    std::vector<float> want;
    for (float v : c.in) want.push_back(static_cast<float>(c.f(v)));
    expect_near(unary(c.op, f32(c.in, {2, 2})), want, 1e-6f);
    // float64 path
    Tensor d = f32(c.in, {4}).cast(DType::Float64);
    Tensor got = unary(c.op, d);
    ASSERT_EQ(got.dtype(), DType::Float64);
    for (size_t i = 0; i < c.in.size(); ++i)
      EXPECT_NEAR(got.data<double>()[i], c.f(static_cast<double>(c.in[i])), 1e-12);
  }
}

TEST(ElemUnary, RoundingOps) {
  const Tensor x = f32({-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 2.7f, -2.2f}, {8});
  expect_near(unary("Round", x), {-2.f, -2.f, -0.f, 0.f, 2.f, 2.f, 3.f, -2.f});
  expect_near(unary("Ceil", x), {-2.f, -1.f, -0.f, 1.f, 2.f, 3.f, 3.f, -2.f});
  expect_near(unary("Floor", x), {-3.f, -2.f, -1.f, 0.f, 1.f, 2.f, 2.f, -3.f});
}

TEST(ElemUnary, AbsNegSignFloat) {
  const Tensor x = f32({-3.f, -0.f, 2.f, kNaN}, {4});
  expect_near(unary("Abs", x), {3.f, 0.f, 2.f, kNaN});
  expect_near(unary("Neg", x), {3.f, 0.f, -2.f, kNaN});
  expect_near(unary("Sign", x), {-1.f, 0.f, 1.f, kNaN});
}

TEST(ElemUnary, AbsNegSignIntegers) {
  const Tensor i32 =
      Tensor::from_vector<int32_t>({-5, 0, 7, std::numeric_limits<int32_t>::min()}, {4});
  EXPECT_EQ(values<int32_t>(unary("Abs", i32)),
            (std::vector<int32_t>{5, 0, 7, std::numeric_limits<int32_t>::min()}));  // wraps
  EXPECT_EQ(values<int32_t>(unary("Neg", i32)),
            (std::vector<int32_t>{5, 0, -7, std::numeric_limits<int32_t>::min()}));
  EXPECT_EQ(values<int32_t>(unary("Sign", i32)), (std::vector<int32_t>{-1, 0, 1, -1}));
  const Tensor i8 = Tensor::from_vector<int8_t>({-128, -1, 3}, {3});
  EXPECT_EQ(values<int8_t>(unary("Abs", i8)), (std::vector<int8_t>{-128, 1, 3}));
  const Tensor u8 = Tensor::from_vector<uint8_t>({0, 9}, {2});
  EXPECT_EQ(values<uint8_t>(unary("Sign", u8)), (std::vector<uint8_t>{0, 1}));
  EXPECT_EQ(values<uint8_t>(unary("Abs", u8)), (std::vector<uint8_t>{0, 9}));
  const Tensor i64 = Tensor::from_vector<int64_t>({-4, 4}, {2});
  EXPECT_EQ(values<int64_t>(unary("Neg", i64)), (std::vector<int64_t>{4, -4}));
}

TEST(ElemUnary, FloatOnlyOpsRejectIntegers) {
  const Tensor i = Tensor::from_vector<int32_t>({1, 2}, {2});
  EXPECT_THROW(unary("Exp", i), Error);
  EXPECT_THROW(unary("Sqrt", i), Error);
  EXPECT_THROW(unary("Not", i), Error);
  EXPECT_THROW(unary("IsNaN", i), Error);
}

TEST(ElemUnary, HalfTypesGoThroughFloat) {
  Tensor h = f32({1.f, 4.f, 0.25f}, {3}).cast(DType::Float16);
  Tensor got = unary("Sqrt", h);
  ASSERT_EQ(got.dtype(), DType::Float16);
  expect_near(got.cast(DType::Float32), {1.f, 2.f, 0.5f});
  Tensor b = f32({-1.5f, 2.f}, {2}).cast(DType::BFloat16);
  Tensor nb = unary("Neg", b);
  ASSERT_EQ(nb.dtype(), DType::BFloat16);
  expect_near(nb.cast(DType::Float32), {1.5f, -2.f});
  Tensor isnan = unary("IsNaN", f32({kNaN, 1.f}, {2}).cast(DType::Float16));
  EXPECT_EQ(values<bool>(isnan), (std::vector<bool>{true, false}));
}

TEST(ElemUnary, IsNaNIsInf) {
  const Tensor x = f32({kNaN, kInf, -kInf, 0.f, -1.f}, {5});
  EXPECT_EQ(values<bool>(unary("IsNaN", x)), (std::vector<bool>{true, false, false, false, false}));
  EXPECT_EQ(values<bool>(unary("IsInf", x)), (std::vector<bool>{false, true, true, false, false}));
  EXPECT_EQ(values<bool>(unary("IsInf", x, {{"detect_negative", int64_t{0}}})),
            (std::vector<bool>{false, true, false, false, false}));
  EXPECT_EQ(values<bool>(unary("IsInf", x, {{"detect_positive", int64_t{0}}})),
            (std::vector<bool>{false, false, true, false, false}));
  Tensor d = unary("IsInf", x.cast(DType::Float64));
  EXPECT_EQ(d.dtype(), DType::Bool);
  EXPECT_EQ(values<bool>(d), (std::vector<bool>{false, true, true, false, false}));
}

TEST(ElemUnary, Not) {
  Tensor x(DType::Bool, {2, 2});
  x.data<bool>()[1] = true;
  x.data<bool>()[2] = true;
  EXPECT_EQ(values<bool>(unary("Not", x)), (std::vector<bool>{true, false, false, true}));
}

TEST(ElemUnary, EmptyAndScalar) {
  Tensor e(DType::Float32, {0, 3});
  Tensor r = unary("Exp", e);
  EXPECT_EQ(r.shape(), (Shape{0, 3}));
  Tensor s = unary("Neg", Tensor::scalar<float>(2.f));
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.data<float>()[0], -2.f);
}

TEST(ElemUnary, TranscendentalCost) {
  const ops::OpDef* exp = ops::find_op("", "Exp");
  const ops::OpDef* abs = ops::find_op("", "Abs");
  ASSERT_TRUE(exp && abs);
  ir::Node n = make_node("Exp", 1, 1);
  ops::CostContext cc{n, {{4, 5}}, {{4, 5}}, {DType::Float32}, {DType::Float32}};
  EXPECT_DOUBLE_EQ(ops::node_cost(*exp, cc).flops, 200.0);
  EXPECT_DOUBLE_EQ(ops::node_cost(*exp, cc).bytes, 160.0);
  EXPECT_DOUBLE_EQ(ops::node_cost(*abs, cc).flops, 20.0);
}

// ---- activations

TEST(ElemActivation, ReluSigmoidTanh) {
  const Tensor x = f32({-2.f, -0.5f, 0.f, 1.5f}, {4});
  expect_near(unary("Relu", x), {0.f, 0.f, 0.f, 1.5f});
  std::vector<float> sig;
  for (float v : {-2.f, -0.5f, 0.f, 1.5f}) sig.push_back(1.f / (1.f + std::exp(-v)));
  expect_near(unary("Sigmoid", x), sig);
  // extreme inputs stay finite
  expect_near(unary("Sigmoid", f32({-200.f, 200.f}, {2})), {0.f, 1.f});
  expect_near(unary("Tanh", x), {std::tanh(-2.f), std::tanh(-0.5f), 0.f, std::tanh(1.5f)});
}

TEST(ElemActivation, ReluIntegersFromOpset14) {
  const Tensor x = Tensor::from_vector<int32_t>({-3, 0, 4}, {3});
  EXPECT_EQ(values<int32_t>(unary("Relu", x)), (std::vector<int32_t>{0, 0, 4}));
  const Tensor i8 = Tensor::from_vector<int8_t>({-3, 5}, {2});
  EXPECT_EQ(values<int8_t>(unary("Relu", i8)), (std::vector<int8_t>{0, 5}));
  EXPECT_THROW(unary("Sigmoid", x), Error);
  EXPECT_THROW(unary("LeakyRelu", x), Error);
}

TEST(ElemActivation, HardSigmoidHardSwish) {
  const Tensor x = f32({-4.f, -1.f, 0.f, 1.f, 4.f}, {5});
  expect_near(unary("HardSigmoid", x), {0.f, 0.3f, 0.5f, 0.7f, 1.f});
  expect_near(unary("HardSigmoid", x, {{"alpha", 0.5f}, {"beta", 0.6f}}),
              {0.f, 0.1f, 0.6f, 1.f, 1.f});
  expect_near(unary("HardSwish", x), {-0.f, -1.f / 3.f, 0.f, 2.f / 3.f, 4.f});
}

TEST(ElemActivation, LeakyReluEluSeluCelu) {
  const Tensor x = f32({-2.f, 0.f, 3.f}, {3});
  expect_near(unary("LeakyRelu", x), {-0.02f, 0.f, 3.f});
  expect_near(unary("LeakyRelu", x, {{"alpha", 0.5f}}), {-1.f, 0.f, 3.f});
  expect_near(unary("Elu", x), {std::exp(-2.f) - 1.f, 0.f, 3.f});
  expect_near(unary("Elu", x, {{"alpha", 2.f}}), {2.f * (std::exp(-2.f) - 1.f), 0.f, 3.f});
  const float a = 1.67326319217681884765625f, g = 1.05070102214813232421875f;
  expect_near(unary("Selu", x), {g * a * (std::exp(-2.f) - 1.f), 0.f, g * 3.f});
  expect_near(unary("Selu", x, {{"alpha", 2.f}, {"gamma", 3.f}}),
              {3.f * 2.f * (std::exp(-2.f) - 1.f), 0.f, 9.f});
  expect_near(unary("Celu", x), {std::exp(-2.f) - 1.f, 0.f, 3.f});
  expect_near(unary("Celu", x, {{"alpha", 2.f}}), {2.f * (std::exp(-1.f) - 1.f), 0.f, 3.f});
  EXPECT_THROW(unary("Celu", x, {{"alpha", 0.f}}), Error);
}

TEST(ElemActivation, SoftplusSoftsign) {
  const Tensor x = f32({-1.f, 0.f, 2.f, 100.f}, {4});
  expect_near(unary("Softplus", x, {}, 1),
              {std::log1p(std::exp(-1.f)), std::log(2.f), std::log1p(std::exp(2.f)), 100.f});
  expect_near(unary("Softsign", x, {}, 1), {-0.5f, 0.f, 2.f / 3.f, 100.f / 101.f});
}

TEST(ElemActivation, ThresholdedReluShrink) {
  const Tensor x = f32({-2.f, 0.5f, 1.f, 1.5f}, {4});
  expect_near(unary("ThresholdedRelu", x), {0.f, 0.f, 0.f, 1.5f});
  expect_near(unary("ThresholdedRelu", x, {{"alpha", 0.2f}}), {0.f, 0.5f, 1.f, 1.5f});
  expect_near(unary("Shrink", x), {-2.f, 0.f, 1.f, 1.5f});  // lambd 0.5, bias 0
  expect_near(unary("Shrink", x, {{"lambd", 1.f}, {"bias", 0.5f}}), {-1.5f, 0.f, 0.f, 1.f});
  const Tensor i = Tensor::from_vector<int32_t>({-5, 0, 5}, {3});
  EXPECT_EQ(values<int32_t>(unary("Shrink", i, {{"lambd", 1.f}, {"bias", 1.f}})),
            (std::vector<int32_t>{-4, 0, 4}));
}

TEST(ElemActivation, Float64AndHalf) {
  const Tensor x = f32({-1.f, 2.f}, {2});
  Tensor d = unary("LeakyRelu", x.cast(DType::Float64), {{"alpha", 0.5f}});
  ASSERT_EQ(d.dtype(), DType::Float64);
  EXPECT_EQ(values<double>(d), (std::vector<double>{-0.5, 2.0}));
  Tensor h = unary("Relu", x.cast(DType::Float16));
  ASSERT_EQ(h.dtype(), DType::Float16);
  expect_near(h.cast(DType::Float32), {0.f, 2.f});
}

// ---- Clip

Tensor clip(const std::vector<Tensor>& in, int64_t opset,
            std::map<std::string, ir::Attribute> a = {}) {
  return run_op(make_node("Clip", in.size(), 1, std::move(a)), in, opset)[0];
}

TEST(ElemClip, BoundsAsInputs) {
  const Tensor x = f32({-3.f, -1.f, 0.f, 2.f, 5.f, kNaN}, {2, 3});
  expect_near(clip({x, Tensor::scalar(-1.5f), Tensor::scalar(2.5f)}, 13),
              {-1.5f, -1.f, 0.f, 2.f, 2.5f, kNaN});
  expect_near(clip({x, Tensor::scalar(0.f)}, 13), {0.f, 0.f, 0.f, 2.f, 5.f, kNaN});
  expect_near(clip({x, Tensor(), Tensor::scalar(1.f)}, 13), {-3.f, -1.f, 0.f, 1.f, 1.f, kNaN});
  expect_near(clip({x}, 11), {-3.f, -1.f, 0.f, 2.f, 5.f, kNaN});
  // min > max: everything becomes max
  expect_near(clip({x, Tensor::scalar(3.f), Tensor::scalar(1.f)}, 13),
              {1.f, 1.f, 1.f, 1.f, 1.f, kNaN});
}

TEST(ElemClip, AttributesBeforeOpset11) {
  const Tensor x = f32({-3.f, 0.f, 5.f}, {3});
  expect_near(clip({x}, 6, {{"min", -1.f}, {"max", 1.f}}), {-1.f, 0.f, 1.f});
  expect_near(clip({x}, 6, {{"max", 1.f}}), {-3.f, 0.f, 1.f});
}

TEST(ElemClip, Integers) {
  const Tensor x = Tensor::from_vector<int8_t>({-128, -5, 0, 100, 127}, {5});
  EXPECT_EQ(values<int8_t>(clip({x, Tensor::scalar<int8_t>(-10), Tensor::scalar<int8_t>(50)}, 13)),
            (std::vector<int8_t>{-10, -5, 0, 50, 50}));
  EXPECT_EQ(values<int8_t>(clip({x, Tensor::scalar<int8_t>(0)}, 13)),
            (std::vector<int8_t>{0, 0, 0, 100, 127}));
  const Tensor i64 = Tensor::from_vector<int64_t>({-7, 7}, {2});
  EXPECT_EQ(values<int64_t>(clip({i64, Tensor(), Tensor::scalar<int64_t>(3)}, 12)),
            (std::vector<int64_t>{-7, 3}));
}

TEST(ElemClip, Errors) {
  const Tensor x = f32({1.f, 2.f}, {2});
  EXPECT_THROW(clip({x, f32({0.f, 1.f}, {2})}, 13), Error);        // non-scalar bound
  EXPECT_THROW(clip({x, Tensor::scalar<int32_t>(0)}, 13), Error);  // dtype mismatch
}

// ---- PRelu

TEST(ElemPRelu, UnidirectionalBroadcast) {
  const Tensor x = f32({-1.f, 2.f, -3.f, 4.f, -5.f, 6.f}, {2, 3});
  const ir::Node n = make_node("PRelu", 2, 1);
  expect_near(run_op(n, {x, f32({0.1f, 0.2f, 0.3f}, {3})})[0], {-0.1f, 2.f, -0.9f, 4.f, -1.f, 6.f});
  expect_near(run_op(n, {x, Tensor::scalar(0.5f)})[0], {-0.5f, 2.f, -1.5f, 4.f, -2.5f, 6.f});
  expect_near(run_op(n, {x, f32({2.f, 3.f}, {2, 1})})[0], {-2.f, 2.f, -6.f, 4.f, -15.f, 6.f});
  // slope larger than x is not unidirectional
  EXPECT_THROW(run_op(n, {f32({-1.f, 2.f, -3.f}, {3}), f32({1, 2, 3, 4, 5, 6}, {2, 3})}), Error);
  EXPECT_THROW(run_op(n, {x, f32({1.f, 2.f}, {2})}), Error);
}

TEST(ElemPRelu, IntegersAndFloat64) {
  const ir::Node n = make_node("PRelu", 2, 1);
  const Tensor x = Tensor::from_vector<int32_t>({-4, 4}, {2});
  EXPECT_EQ(values<int32_t>(run_op(n, {x, Tensor::scalar<int32_t>(3)})[0]),
            (std::vector<int32_t>{-12, 4}));
  const Tensor d = f32({-4.f, 4.f}, {2}).cast(DType::Float64);
  EXPECT_EQ(values<double>(run_op(n, {d, Tensor::scalar<double>(0.25)})[0]),
            (std::vector<double>{-1.0, 4.0}));
}

}  // namespace
}  // namespace joule
