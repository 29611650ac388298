// Binary arithmetic, comparisons and logical ops, Where, variadic ops, Cast.
#include "ops/test_elementwise_util.h"

namespace joule {
namespace {

using namespace joule::elemtest;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor binary(const std::string& op, const Tensor& a, const Tensor& b,
              std::map<std::string, ir::Attribute> attrs = {}, int64_t opset = 17) {
  return run_op(make_node(op, 2, 1, std::move(attrs)), {a, b}, opset)[0];
}

TEST(ElemBinary, FloatArithmeticWithBroadcast) {
  const Tensor a = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor row = f32({10, 20, 30}, {3});
  const Tensor col = f32({2, 4}, {2, 1});
  EXPECT_EQ(values<float>(binary("Add", a, row)), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  EXPECT_EQ(values<float>(binary("Sub", a, col)), (std::vector<float>{-1, 0, 1, 0, 1, 2}));
  EXPECT_EQ(values<float>(binary("Mul", col, row)), (std::vector<float>{20, 40, 60, 40, 80, 120}));
  EXPECT_EQ(values<float>(binary("Div", a, Tensor::scalar(2.f))),
            (std::vector<float>{0.5f, 1, 1.5f, 2, 2.5f, 3}));
  EXPECT_EQ(values<float>(binary("Div", Tensor::scalar(6.f), a)),
            (std::vector<float>{6, 3, 2, 1.5f, 1.2f, 1}));
  // shape [2,1] x [3] -> [2,3]
  EXPECT_EQ(binary("Add", col, row).shape(), (Shape{2, 3}));
  // rank-0 with rank-0
  EXPECT_EQ(values<float>(binary("Add", Tensor::scalar(1.f), Tensor::scalar(2.f))),
            (std::vector<float>{3}));
  // empty
  EXPECT_EQ(binary("Add", Tensor(DType::Float32, {0, 3}), row).shape(), (Shape{0, 3}));
}

TEST(ElemBinary, IntegerArithmetic) {
  const Tensor a = vec<int32_t>({7, -7, 7, -7}, {4});
  const Tensor b = vec<int32_t>({2, 2, -2, -2}, {4});
  EXPECT_EQ(values<int32_t>(binary("Div", a, b)),
            (std::vector<int32_t>{3, -3, -3, 3}));  // truncates
  EXPECT_EQ(values<int32_t>(binary("Mul", a, b)), (std::vector<int32_t>{14, -14, -14, 14}));
  const int32_t mx = std::numeric_limits<int32_t>::max(), mn = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(values<int32_t>(binary("Add", vec<int32_t>({mx}, {1}), vec<int32_t>({1}, {1}))),
            (std::vector<int32_t>{mn}));  // wraps
  EXPECT_EQ(values<int32_t>(binary("Div", vec<int32_t>({mn}, {1}), vec<int32_t>({-1}, {1}))),
            (std::vector<int32_t>{mn}));
  const Tensor u8a = vec<uint8_t>({250, 3}, {2}), u8b = vec<uint8_t>({10, 5}, {2});
  EXPECT_EQ(values<uint8_t>(binary("Add", u8a, u8b)), (std::vector<uint8_t>{4, 8}));
  EXPECT_EQ(values<uint8_t>(binary("Sub", u8a, u8b)), (std::vector<uint8_t>{240, 254}));
  EXPECT_EQ(values<uint8_t>(binary("Div", u8a, u8b)), (std::vector<uint8_t>{25, 0}));
  const Tensor i64 = vec<int64_t>({1, 2}, {2});
  EXPECT_EQ(values<int64_t>(binary("Mul", i64, vec<int64_t>({3}, {1}))),
            (std::vector<int64_t>{3, 6}));
  const Tensor u16 = vec<uint16_t>({65535}, {1});
  EXPECT_EQ(values<uint16_t>(binary("Mul", u16, u16)), (std::vector<uint16_t>{1}));
  const Tensor f64 = vec<double>({1.5}, {1});
  EXPECT_EQ(values<double>(binary("Sub", f64, vec<double>({0.25}, {1}))),
            (std::vector<double>{1.25}));
}

TEST(ElemBinary, Errors) {
  EXPECT_THROW(binary("Div", vec<int32_t>({1}, {1}), vec<int32_t>({0}, {1})), Error);
  EXPECT_THROW(binary("Mod", vec<int64_t>({1}, {1}), vec<int64_t>({0}, {1})), Error);
  EXPECT_THROW(binary("Add", f32({1, 2}, {2}), f32({1, 2, 3}, {3})), Error);  // shapes
  EXPECT_THROW(binary("Add", f32({1}, {1}), vec<int32_t>({1}, {1})), Error);  // dtypes
  EXPECT_THROW(binary("Add", vec<bool>({true}, {1}), vec<bool>({true}, {1})), Error);
}

TEST(ElemBinary, HalfThroughFloat) {
  const Tensor a = f32({1.5f, -2.f}, {2}).cast(DType::Float16);
  const Tensor b = f32({0.25f, 4.f}, {2}).cast(DType::Float16);
  Tensor r = binary("Mul", a, b);
  ASSERT_EQ(r.dtype(), DType::Float16);
  EXPECT_EQ(values<float>(r.cast(DType::Float32)), (std::vector<float>{0.375f, -8.f}));
  Tensor bf = binary("Add", a.cast(DType::BFloat16), b.cast(DType::BFloat16));
  ASSERT_EQ(bf.dtype(), DType::BFloat16);
  EXPECT_EQ(values<float>(bf.cast(DType::Float32)), (std::vector<float>{1.75f, 2.f}));
}

TEST(ElemBinary, LegacyBroadcastAxis) {
  // opset 6: B of shape [3] aligned at axis 1 of A [2,3,2]
  const Tensor a(DType::Float32, {2, 3, 2});
  const Tensor b = f32({1, 2, 3}, {3});
  Tensor r = binary("Add", a, b, {{"broadcast", int64_t{1}}, {"axis", int64_t{1}}}, 6);
  EXPECT_EQ(r.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(values<float>(r), (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  // the same attributes are ignored from opset 7 (numpy broadcasting of [3] against [..,2] fails)
  EXPECT_THROW(binary("Add", a, b, {{"broadcast", int64_t{1}}, {"axis", int64_t{1}}}, 7), Error);
  EXPECT_THROW(binary("Add", a, b, {{"broadcast", int64_t{1}}, {"axis", int64_t{2}}}, 6), Error);
}

TEST(ElemBinary, Mod) {
  const Tensor a = vec<int32_t>({-4, 7, 5, 4, -7, 8}, {6});
  const Tensor b = vec<int32_t>({17, -3, 2, -2, 3, -5}, {6});
  // sign of the divisor (Python %)
  EXPECT_EQ(values<int32_t>(binary("Mod", a, b)), (std::vector<int32_t>{13, -2, 1, 0, 2, -2}));
  // fmod: sign of the dividend
  EXPECT_EQ(values<int32_t>(binary("Mod", a, b, {{"fmod", int64_t{1}}})),
            (std::vector<int32_t>{-4, 1, 1, 0, -1, 3}));
  const Tensor fa = f32({-4.3f, 7.2f, 5.f, -7.5f}, {4}), fb = f32({2.1f, -3.4f, 2.f, 2.f}, {4});
  Tensor f = binary("Mod", fa, fb, {{"fmod", int64_t{1}}});
  std::vector<float> want = {std::fmod(-4.3f, 2.1f), std::fmod(7.2f, -3.4f), 1.f, -1.5f};
  EXPECT_EQ(values<float>(f), want);
  EXPECT_EQ(values<uint8_t>(binary("Mod", vec<uint8_t>({7, 9}, {2}), vec<uint8_t>({3}, {1}))),
            (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(values<int8_t>(binary("Mod", vec<int8_t>({-128}, {1}), vec<int8_t>({-1}, {1}))),
            (std::vector<int8_t>{0}));
  EXPECT_THROW(binary("Mod", a, b, {{"fmod", int64_t{2}}}), Error);
}

TEST(ElemBinary, BitShift) {
  const Tensor x = vec<uint8_t>({16, 4, 1, 255}, {4});
  const Tensor s = vec<uint8_t>({1, 2, 3, 9}, {4});
  EXPECT_EQ(values<uint8_t>(binary("BitShift", x, s, {{"direction", std::string("RIGHT")}})),
            (std::vector<uint8_t>{8, 1, 0, 0}));
  EXPECT_EQ(values<uint8_t>(binary("BitShift", x, s, {{"direction", std::string("LEFT")}})),
            (std::vector<uint8_t>{32, 16, 8, 0}));
  const Tensor x64 = vec<uint64_t>({1}, {1});
  EXPECT_EQ(values<uint64_t>(binary("BitShift", x64, vec<uint64_t>({63}, {1}),
                                    {{"direction", std::string("LEFT")}})),
            (std::vector<uint64_t>{uint64_t{1} << 63}));
  EXPECT_THROW(binary("BitShift", x, s, {{"direction", std::string("UP")}}), Error);
  EXPECT_THROW(binary("BitShift", vec<int32_t>({1}, {1}), vec<int32_t>({1}, {1}),
                      {{"direction", std::string("LEFT")}}),
               Error);
}

TEST(ElemBinary, PowMixedTypes) {
  const Tensor x = f32({1, 2, 3}, {3});
  EXPECT_EQ(values<float>(binary("Pow", x, f32({2, 3, 0.5f}, {3}))),
            (std::vector<float>{1, 8, std::pow(3.f, 0.5f)}));
  Tensor r = binary("Pow", x, vec<int64_t>({3, 2, 1}, {3}));
  ASSERT_EQ(r.dtype(), DType::Float32);
  EXPECT_EQ(values<float>(r), (std::vector<float>{1, 4, 3}));
  Tensor i = binary("Pow", vec<int32_t>({2, -3, 5}, {3}), vec<int32_t>({10, 3, 0}, {3}));
  EXPECT_EQ(values<int32_t>(i), (std::vector<int32_t>{1024, -27, 1}));
  Tensor il = binary("Pow", vec<int64_t>({3}, {1}), vec<int64_t>({39}, {1}));
  EXPECT_EQ(values<int64_t>(il), (std::vector<int64_t>{4052555153018976267LL}));  // exact
  Tensor ifl = binary("Pow", vec<int32_t>({1, 2, 3}, {3}), f32({1, 2, 0.5f}, {3}));
  ASSERT_EQ(ifl.dtype(), DType::Int32);
  EXPECT_EQ(values<int32_t>(ifl), (std::vector<int32_t>{1, 4, 1}));
  Tensor neg =
      binary("Pow", vec<int32_t>({1, -1, -1, 2}, {4}), vec<int64_t>({-2, -3, -2, -1}, {4}));
  EXPECT_EQ(values<int32_t>(neg), (std::vector<int32_t>{1, -1, 1, 0}));
  Tensor bc = binary("Pow", f32({2, 3}, {2, 1}), Tensor::scalar(2.f));
  EXPECT_EQ(values<float>(bc), (std::vector<float>{4, 9}));
  Tensor h = binary("Pow", x.cast(DType::Float16), vec<int32_t>({2, 2, 2}, {3}));
  ASSERT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(values<float>(h.cast(DType::Float32)), (std::vector<float>{1, 4, 9}));
}

// ---- comparisons and logic

TEST(ElemCompare, AllComparisons) {
  const Tensor a = f32({1, 2, 3, kNaN}, {4});
  const Tensor b = Tensor::scalar(2.f);
  EXPECT_EQ(values<bool>(binary("Equal", a, b)), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(values<bool>(binary("Less", a, b)), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(values<bool>(binary("LessOrEqual", a, b)),
            (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(values<bool>(binary("Greater", a, b)), (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(values<bool>(binary("GreaterOrEqual", a, b)),
            (std::vector<bool>{false, true, true, false}));
  const Tensor i = vec<int64_t>({-1, 5}, {2, 1});
  Tensor r = binary("Less", i, vec<int64_t>({0, 6, -2}, {3}));
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<bool>(r), (std::vector<bool>{true, true, false, false, true, false}));
  EXPECT_EQ(
      values<bool>(binary("Equal", vec<bool>({true, false}, {2}), vec<bool>({true, true}, {2}))),
      (std::vector<bool>{true, false}));
  EXPECT_THROW(binary("Less", vec<bool>({true}, {1}), vec<bool>({true}, {1})), Error);
  EXPECT_THROW(binary("Equal", f32({1}, {1}), vec<int32_t>({1}, {1})), Error);
  Tensor h = binary("Greater", a.cast(DType::Float16), b.cast(DType::Float16));
  EXPECT_EQ(h.dtype(), DType::Bool);
  EXPECT_EQ(values<bool>(h), (std::vector<bool>{false, false, true, false}));
}

TEST(ElemCompare, Logic) {
  const Tensor a = vec<bool>({true, true, false, false}, {2, 2});
  const Tensor b = vec<bool>({true, false}, {2});
  EXPECT_EQ(values<bool>(binary("And", a, b)), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(values<bool>(binary("Or", a, b)), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(values<bool>(binary("Xor", a, b)), (std::vector<bool>{false, true, true, false}));
  EXPECT_THROW(binary("And", f32({1}, {1}), f32({1}, {1})), Error);
  // legacy opset 1 broadcast with axis: B [2] aligned with axis 0 of A [2,2]
  Tensor l = binary("Or", a, vec<bool>({false, true}, {2}),
                    {{"broadcast", int64_t{1}}, {"axis", int64_t{0}}}, 1);
  EXPECT_EQ(values<bool>(l), (std::vector<bool>{true, true, true, true}));
  Tensor l2 = binary("And", a, vec<bool>({false, true}, {2}),
                     {{"broadcast", int64_t{1}}, {"axis", int64_t{0}}}, 1);
  EXPECT_EQ(values<bool>(l2), (std::vector<bool>{false, false, false, false}));
}

// ---- Where

TEST(ElemWhere, ThreeWayBroadcast) {
  const ir::Node n = make_node("Where", 3, 1);
  const Tensor cond = vec<bool>({true, false, true}, {3});
  const Tensor x = f32({1, 2}, {2, 1});
  const Tensor y = Tensor::scalar(-1.f);
  Tensor r = run_op(n, {cond, x, y})[0];
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(r), (std::vector<float>{1, -1, 1, 2, -1, 2}));
  Tensor same = run_op(n, {cond, f32({1, 2, 3}, {3}), f32({4, 5, 6}, {3})})[0];
  EXPECT_EQ(values<float>(same), (std::vector<float>{1, 5, 3}));
  Tensor i = run_op(
      n, {vec<bool>({false, true}, {2}), vec<int64_t>({1, 2}, {2}), vec<int64_t>({3}, {1})})[0];
  EXPECT_EQ(values<int64_t>(i), (std::vector<int64_t>{3, 2}));
  Tensor h = run_op(
      n, {cond, f32({1, 2, 3}, {3}).cast(DType::Float16), f32({0}, {1}).cast(DType::Float16)})[0];
  EXPECT_EQ(values<float>(h.cast(DType::Float32)), (std::vector<float>{1, 0, 3}));
  EXPECT_THROW(run_op(n, {f32({1}, {1}), x, y}), Error);              // cond not bool
  EXPECT_THROW(run_op(n, {cond, x, vec<int32_t>({1}, {1})}), Error);  // x/y dtypes
  EXPECT_THROW(run_op(n, {vec<bool>({true, false}, {2}), f32({1, 2, 3}, {3}), y}), Error);
}

// ---- variadic

Tensor variadic(const std::string& op, const std::vector<Tensor>& in) {
  return run_op(make_node(op, in.size(), 1), in)[0];
}

TEST(ElemVariadic, MaxMinSumMean) {
  const Tensor a = f32({3, 2, 1}, {3}), b = f32({1, 4, 4}, {3}), c = f32({2, 5, 0}, {3});
  EXPECT_EQ(values<float>(variadic("Max", {a, b, c})), (std::vector<float>{3, 5, 4}));
  EXPECT_EQ(values<float>(variadic("Min", {a, b, c})), (std::vector<float>{1, 2, 0}));
  EXPECT_EQ(values<float>(variadic("Sum", {a, b, c})), (std::vector<float>{6, 11, 5}));
  EXPECT_EQ(values<float>(variadic("Mean", {a, b, c})),
            (std::vector<float>{2, 11.f / 3.f, 5.f / 3.f}));
  // one input: a copy
  Tensor one = variadic("Max", {a});
  EXPECT_EQ(values<float>(one), (std::vector<float>{3, 2, 1}));
  EXPECT_NE(one.raw(), a.raw());
  // broadcasting of all inputs, including the first
  Tensor r = variadic("Sum", {Tensor::scalar(1.f), f32({1, 2}, {2, 1}), f32({10, 20, 30}, {3})});
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(r), (std::vector<float>{12, 22, 32, 13, 23, 33}));
  // NaN propagates through Max/Min
  Tensor n = variadic("Max", {f32({kNaN, 1}, {2}), f32({1, kNaN}, {2})});
  EXPECT_TRUE(std::isnan(n.data<float>()[0]));
  EXPECT_TRUE(std::isnan(n.data<float>()[1]));
}

TEST(ElemVariadic, IntegersAndHalf) {
  EXPECT_EQ(
      values<uint8_t>(variadic("Max", {vec<uint8_t>({1, 200}, {2}), vec<uint8_t>({100, 3}, {2})})),
      (std::vector<uint8_t>{100, 200}));
  EXPECT_EQ(
      values<int16_t>(variadic("Min", {vec<int16_t>({-1, 200}, {2}), vec<int16_t>({100, 3}, {2})})),
      (std::vector<int16_t>{-1, 3}));
  EXPECT_EQ(
      values<int32_t>(variadic("Mean", {vec<int32_t>({1, 4}, {2}), vec<int32_t>({2, 4}, {2})})),
      (std::vector<int32_t>{1, 4}));
  Tensor h = variadic(
      "Max", {f32({1, 5}, {2}).cast(DType::Float16), f32({3, 2}, {2}).cast(DType::Float16)});
  ASSERT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(values<float>(h.cast(DType::Float32)), (std::vector<float>{3, 5}));
  EXPECT_THROW(variadic("Sum", {f32({1}, {1}), vec<int32_t>({1}, {1})}), Error);
  EXPECT_THROW(variadic("Sum", {f32({1, 2}, {2}), f32({1, 2, 3}, {3})}), Error);
}

// ---- Cast

Tensor cast(const Tensor& x, int64_t to) {
  return run_op(make_node("Cast", 1, 1, {{"to", to}}), {x})[0];
}

TEST(ElemCast, OnnxCodes) {
  const Tensor x = f32({-1.7f, 0.f, 2.5f, 300.f}, {2, 2});
  Tensor i32 = cast(x, 6);
  ASSERT_EQ(i32.dtype(), DType::Int32);
  EXPECT_EQ(values<int32_t>(i32), (std::vector<int32_t>{-1, 0, 2, 300}));
  EXPECT_EQ(i32.shape(), (Shape{2, 2}));
  EXPECT_EQ(values<uint8_t>(cast(x, 2)), (std::vector<uint8_t>{0, 0, 2, 255}));  // saturates
  EXPECT_EQ(values<bool>(cast(x, 9)), (std::vector<bool>{true, false, true, true}));
  EXPECT_EQ(values<double>(cast(x, 11)), (std::vector<double>{-1.7f, 0.0, 2.5, 300.0}));
  EXPECT_EQ(cast(x, 10).dtype(), DType::Float16);
  EXPECT_EQ(values<float>(cast(cast(x, 10), 1)),
            (std::vector<float>{-1.7001953125f, 0.f, 2.5f, 300.f}));
  EXPECT_EQ(cast(x, 16).dtype(), DType::BFloat16);
  EXPECT_EQ(cast(x, 7).dtype(), DType::Int64);
  EXPECT_EQ(cast(x, 13).dtype(), DType::UInt64);
  EXPECT_EQ(values<float>(cast(vec<int64_t>({-3, 7}, {2}), 1)), (std::vector<float>{-3, 7}));
  EXPECT_EQ(cast(x, 8).dtype(), DType::String);               // numbers as text (test_tensor_sequence.cpp)
  EXPECT_THROW(cast(x, 14), Error);                           // complex64
  EXPECT_THROW(run_op(make_node("Cast", 1, 1), {x}), Error);  // no `to`
  EXPECT_FALSE(
      ops::find_op("", "Cast")->check(make_node("Cast", 1, 1, {{"to", int64_t{14}}}), 13).empty());
  EXPECT_TRUE(
      ops::find_op("", "Cast")->check(make_node("Cast", 1, 1, {{"to", int64_t{1}}}), 13).empty());
}

TEST(ElemCast, CastLike) {
  const ir::Node n = make_node("CastLike", 2, 1);
  Tensor r = run_op(n, {f32({1.9f, -2.9f}, {2}), vec<int8_t>({0}, {1})}, 15)[0];
  ASSERT_EQ(r.dtype(), DType::Int8);
  EXPECT_EQ(values<int8_t>(r), (std::vector<int8_t>{1, -2}));
  Tensor d = run_op(n, {vec<int32_t>({5}, {1}), Tensor::scalar<double>(0)}, 15)[0];
  EXPECT_EQ(values<double>(d), (std::vector<double>{5.0}));
}

}  // namespace
}  // namespace joule

namespace joule {
namespace {

using namespace joule::elemtest;

TEST(ElemInfer, SymbolicDimsPassThrough) {
  const ir::TensorType x = sym_type(DType::Float32, {"N", "3", "H"});
  const ir::TensorType row = sym_type(DType::Float32, {"1", "H"});
  ir::TensorType add = infer_type(make_node("Add", 2, 1), {&x, &row});
  EXPECT_EQ(add.str(), "float32[N,3,H]");
  const ir::TensorType i = sym_type(DType::Int64, {"N", "3", "H"});
  EXPECT_THROW(infer_type(make_node("Add", 2, 1), {&x, &i}), Error);
  EXPECT_EQ(infer_type(make_node("Less", 2, 1), {&x, &row}).str(), "bool[N,3,H]");
  EXPECT_EQ(infer_type(make_node("Pow", 2, 1), {&x, &i}).str(), "float32[N,3,H]");
  EXPECT_EQ(infer_type(make_node("Cast", 1, 1, {{"to", int64_t{7}}}), {&x}).str(), "int64[N,3,H]");
  EXPECT_EQ(infer_type(make_node("CastLike", 2, 1), {&x, &i}).str(), "int64[N,3,H]");
  EXPECT_EQ(infer_type(make_node("IsNaN", 1, 1), {&x}).str(), "bool[N,3,H]");
  EXPECT_EQ(infer_type(make_node("Sigmoid", 1, 1), {&x}).str(), "float32[N,3,H]");
  const ir::TensorType c = sym_type(DType::Bool, {"N", "1", "1"});
  const ir::TensorType s = sym_type(DType::Float32, {});
  EXPECT_EQ(infer_type(make_node("Where", 3, 1), {&c, &x, &s}).str(), "float32[N,3,H]");
  EXPECT_EQ(infer_type(make_node("Max", 3, 1), {&s, &x, &row}).str(), "float32[N,3,H]");
  // Clip with absent min: bounds checked only when present
  EXPECT_EQ(infer_type(make_node("Clip", 3, 1), {&x, nullptr, &s}).str(), "float32[N,3,H]");
  const ir::TensorType v = sym_type(DType::Float32, {"2"});
  EXPECT_THROW(infer_type(make_node("Clip", 2, 1), {&x, &v}), Error);
  // PRelu: the slope must broadcast to x
  const ir::TensorType slope = sym_type(DType::Float32, {"3", "1"});
  EXPECT_EQ(infer_type(make_node("PRelu", 2, 1), {&x, &slope}).str(), "float32[N,3,H]");
  const ir::TensorType big = sym_type(DType::Float32, {"2", "N", "3", "H"});
  EXPECT_THROW(infer_type(make_node("PRelu", 2, 1), {&x, &big}), Error);
  // unknown rank stays unknown
  ir::TensorType unk;
  unk.dtype = DType::Float32;
  EXPECT_FALSE(infer_type(make_node("Mul", 2, 1), {&x, &unk}).has_shape);
  // legacy broadcast with axis, opset 6
  const ir::TensorType b = sym_type(DType::Float32, {"3"});
  EXPECT_EQ(infer_type(make_node("Add", 2, 1, {{"broadcast", int64_t{1}}, {"axis", int64_t{1}}}),
                       {&x, &b}, 6)
                .str(),
            "float32[N,3,H]");
}

}  // namespace
}  // namespace joule

namespace joule {
namespace {

using namespace joule::elemtest;

// The row-wise broadcasting loop against a per-element reference (ops::BroadcastIndexer).
TEST(ElemBinary, BroadcastPatternsMatchNaive) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3, 4, 5}, {1, 3, 1, 1}},
      {{2, 3, 4, 5}, {5}},
      {{2, 3, 4, 5}, {4, 1}},
      {{2, 1, 4, 1}, {1, 3, 1, 5}},
      {{3, 1}, {1, 4}},
      {{1, 1, 7}, {6, 1, 1}},
      {{4, 5}, {}},
      {{}, {2, 2}},
      {{2, 3, 4}, {2, 3, 4}},
      {{1}, {1}},
      {{0, 3}, {1, 3}},
      {{2, 1, 3, 1, 2}, {2, 2, 3, 2, 1}},
      {{5, 1, 1}, {5, 2, 2}},
      {{1, 2, 1, 2}, {2, 1, 2, 1}},
  };
  uint32_t seed = 1;
  for (const auto& [sa, sb] : cases) {
    SCOPED_TRACE(shape_str(sa) + " + " + shape_str(sb));
    const Tensor a = random_tensor(sa, seed++), b = random_tensor(sb, seed++);
    const Shape out = ops::broadcast_shapes({sa, sb}, make_node("Sub", 2, 1));
    Tensor got = binary("Sub", a, b);
    ASSERT_EQ(got.shape(), out);
    ops::BroadcastIndexer ia(out, sa), ib(out, sb);
    for (int64_t i = 0; i < got.numel(); ++i)
      ASSERT_EQ(got.data<float>()[i], a.data<float>()[ia.offset(i)] - b.data<float>()[ib.offset(i)])
          << "element " << i;
    // Where with the condition broadcast a third way
    Tensor cond(DType::Bool, {sb.empty() ? 1 : sb.back()});
    for (int64_t i = 0; i < cond.numel(); i += 2) cond.data<bool>()[i] = true;
    const Shape wout = ops::broadcast_shapes({cond.shape(), sa, sb}, make_node("Where", 3, 1));
    Tensor w = run_op(make_node("Where", 3, 1), {cond, a, b})[0];
    ASSERT_EQ(w.shape(), wout);
    ops::BroadcastIndexer wc(wout, cond.shape()), wa(wout, sa), wb(wout, sb);
    for (int64_t i = 0; i < w.numel(); ++i)
      ASSERT_EQ(w.data<float>()[i], cond.data<bool>()[wc.offset(i)] ? a.data<float>()[wa.offset(i)]
                                                                    : b.data<float>()[wb.offset(i)])
          << "element " << i;
  }
}

}  // namespace
}  // namespace joule
