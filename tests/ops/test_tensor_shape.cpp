// Tests for Reshape, Flatten, Squeeze, Unsqueeze, Shape, Size, Constant, ConstantOfShape,
// Expand, Range.
#include "test_tensor_util.h"

using namespace joule;
using namespace joule::testing;
using ir::Attribute;

namespace {

// ---------------- Reshape ----------------
TEST(TensorReshape, ZeroCopiesAndMinusOneInfers) {
  auto n = make_node("Reshape", 2, 1);
  auto out = run_op(n, {iota_f({2, 3, 4}), i64v({0, -1})}, 17, true);
  EXPECT_EQ(out[0].shape(), (Shape{2, 12}));
  EXPECT_EQ(vals<float>(out[0])[13], 13.f);
  out = run_op(n, {iota_f({2, 3, 4}), i64v({4, 0, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{4, 3, 2}));
}

TEST(TensorReshape, AllowZero) {
  auto n = make_node("Reshape", 2, 1, {{"allowzero", Attribute{int64_t{1}}}});
  auto out = run_op(n, {Tensor(DType::Float32, {0, 3}), i64v({3, 0})}, 14, true);
  EXPECT_EQ(out[0].shape(), (Shape{3, 0}));
  EXPECT_THROW(run_op(n, {Tensor(DType::Float32, {0, 3}), i64v({0, -1})}, 14), Error);
  // before opset 14 allowzero is ignored: 0 copies
  out = run_op(n, {iota_f({2, 3}), i64v({0, 3})}, 13);
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
}

TEST(TensorReshape, Errors) {
  auto n = make_node("Reshape", 2, 1);
  EXPECT_THROW(run_op(n, {iota_f({2, 3}), i64v({-1, -1})}), Error);
  EXPECT_THROW(run_op(n, {iota_f({2, 3}), i64v({4, -1})}), Error);
  EXPECT_THROW(run_op(n, {iota_f({2, 3}), i64v({5})}), Error);
  EXPECT_THROW(run_op(n, {iota_f({2, 3}), i64v({0, 0, 0})}), Error);
  EXPECT_THROW(run_op(n, {iota_f({2, 3}), i64v({-2, 3})}), Error);
}

TEST(TensorReshape, ScalarAndInt64AndOldAttr) {
  auto n = make_node("Reshape", 2, 1);
  auto out = run_op(n, {i64v({7}), i64v({})}, 17, true);
  EXPECT_EQ(out[0].rank(), 0);
  EXPECT_EQ(vals<int64_t>(out[0])[0], 7);
  auto old = make_node("Reshape", 1, 1, {{"shape", Attribute{std::vector<int64_t>{3, -1}}}});
  out = run_op(old, {iota_f({6})}, 4);
  EXPECT_EQ(out[0].shape(), (Shape{3, 2}));
}

TEST(TensorReshape, SymbolicInference) {
  auto n = make_node("Reshape", 2, 1);
  Tensor shape = i64v({0, -1});
  auto r = infer_only(n, {ttype(DType::Float32, {P("N"), S(3), S(4)}), ttype(DType::Int64, {S(2)})},
                      {nullptr, &shape});
  ASSERT_TRUE(r.types[0].has_shape);
  EXPECT_EQ(r.types[0].dims[0], P("N"));
  EXPECT_EQ(r.types[0].dims[1], S(12));
  // -1 takes over a lone symbol
  Tensor shape2 = i64v({3, -1});
  r = infer_only(n, {ttype(DType::Float32, {P("N"), S(3)}), ttype(DType::Int64, {S(2)})}, {nullptr, &shape2});
  EXPECT_EQ(r.types[0].dims[1], P("N"));
  // unknown shape value, static length: rank known
  r = infer_only(n, {ttype(DType::Float32, {P("N"), S(3)}), ttype(DType::Int64, {S(3)})});
  ASSERT_TRUE(r.types[0].has_shape);
  EXPECT_EQ(r.types[0].dims.size(), 3u);
  EXPECT_FALSE(r.types[0].dims[0].is_static());
  // unknown length: unknown rank
  r = infer_only(n, {ttype(DType::Float32, {S(3)}), ttype(DType::Int64, {P("k")})});
  EXPECT_FALSE(r.types[0].has_shape);
  EXPECT_EQ(r.types[0].dtype, DType::Float32);
}

// ---------------- Flatten ----------------
TEST(TensorFlatten, Axes) {
  auto x = iota_f({2, 3, 4, 5});
  EXPECT_EQ(run_op(make_node("Flatten", 1, 1), {x})[0].shape(), (Shape{2, 60}));
  EXPECT_EQ(run_op(make_node("Flatten", 1, 1, {{"axis", Attribute{int64_t{0}}}}), {x})[0].shape(), (Shape{1, 120}));
  EXPECT_EQ(run_op(make_node("Flatten", 1, 1, {{"axis", Attribute{int64_t{4}}}}), {x})[0].shape(), (Shape{120, 1}));
  EXPECT_EQ(run_op(make_node("Flatten", 1, 1, {{"axis", Attribute{int64_t{-1}}}}), {x})[0].shape(), (Shape{24, 5}));
  EXPECT_THROW(run_op(make_node("Flatten", 1, 1, {{"axis", Attribute{int64_t{5}}}}), {x}), Error);
  auto r = infer_only(make_node("Flatten", 1, 1), {ttype(DType::Float32, {P("N"), S(3), S(4)})});
  EXPECT_EQ(r.types[0].dims[0], P("N"));
  EXPECT_EQ(r.types[0].dims[1], S(12));
}

// ---------------- Squeeze / Unsqueeze ----------------
TEST(TensorSqueeze, AxesInputAndAttr) {
  auto x = iota_f({1, 3, 1, 2});
  auto n13 = make_node("Squeeze", 2, 1);
  EXPECT_EQ(run_op(n13, {x, i64v({-2})}, 13, true)[0].shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(run_op(make_node("Squeeze", 1, 1), {x}, 13)[0].shape(), (Shape{3, 2}));
  auto n11 = make_node("Squeeze", 1, 1, {{"axes", Attribute{std::vector<int64_t>{0, 2}}}});
  EXPECT_EQ(run_op(n11, {x}, 11)[0].shape(), (Shape{3, 2}));
  EXPECT_THROW(run_op(n13, {x, i64v({1})}, 13), Error);
  EXPECT_EQ(run_op(make_node("Squeeze", 1, 1), {iota_f({1})}, 13)[0].rank(), 0);
  EXPECT_EQ(run_op(n13, {x, i64v({})}, 13, true)[0].shape(), (Shape{3, 2}));  // empty axes = all
  // symbolic dims without axes: rank unknown
  auto r = infer_only(make_node("Squeeze", 1, 1), {ttype(DType::Float32, {P("N"), S(1)})});
  EXPECT_FALSE(r.types[0].has_shape);
  Tensor ax = i64v({1});
  r = infer_only(n13, {ttype(DType::Float32, {P("N"), S(1)}), ttype(DType::Int64, {S(1)})}, {nullptr, &ax});
  ASSERT_EQ(r.types[0].dims.size(), 1u);
  EXPECT_EQ(r.types[0].dims[0], P("N"));
}

TEST(TensorUnsqueeze, AxesInputAndAttr) {
  auto x = iota_f({3, 4});
  auto n13 = make_node("Unsqueeze", 2, 1);
  EXPECT_EQ(run_op(n13, {x, i64v({0, 3})}, 13, true)[0].shape(), (Shape{1, 3, 4, 1}));
  EXPECT_EQ(run_op(n13, {x, i64v({-1, 0})}, 13)[0].shape(), (Shape{1, 3, 4, 1}));
  EXPECT_EQ(run_op(n13, {x, i64v({2, 0})}, 13)[0].shape(), (Shape{1, 3, 1, 4}));
  auto n11 = make_node("Unsqueeze", 1, 1, {{"axes", Attribute{std::vector<int64_t>{1}}}});
  EXPECT_EQ(run_op(n11, {x}, 11)[0].shape(), (Shape{3, 1, 4}));
  EXPECT_THROW(run_op(n13, {x, i64v({0, 0})}, 13), Error);
  EXPECT_THROW(run_op(n13, {x, i64v({3})}, 13), Error);
  // scalar -> [1]: the common shape-subgraph case
  auto out = run_op(n13, {Tensor::scalar<int64_t>(5), i64v({0})}, 13, true);
  EXPECT_EQ(out[0].shape(), (Shape{1}));
  EXPECT_EQ(vals<int64_t>(out[0])[0], 5);
  auto r = infer_only(n13, {ttype(DType::Float32, {P("N")}), ttype(DType::Int64, {S(2)})});
  EXPECT_EQ(r.types[0].dims.size(), 3u);
}

// ---------------- Shape / Size ----------------
TEST(TensorShape, ValuesAndStartEnd) {
  auto x = iota_f({2, 3, 4});
  auto out = run_op(make_node("Shape", 1, 1), {x});
  EXPECT_EQ(vals<int64_t>(out[0]), (std::vector<int64_t>{2, 3, 4}));
  auto n = make_node("Shape", 1, 1, {{"start", Attribute{int64_t{-2}}}, {"end", Attribute{int64_t{10}}}});
  EXPECT_EQ(vals<int64_t>(run_op(n, {x}, 15)[0]), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(vals<int64_t>(run_op(n, {x}, 13)[0]).size(), 3u);  // attrs ignored before 15
  auto n2 = make_node("Shape", 1, 1, {{"start", Attribute{int64_t{2}}}, {"end", Attribute{int64_t{1}}}});
  EXPECT_EQ(run_op(n2, {x}, 15)[0].shape(), (Shape{0}));
  EXPECT_EQ(run_op(make_node("Shape", 1, 1), {Tensor::scalar<float>(1)})[0].shape(), (Shape{0}));
}

TEST(TensorShape, InferSetsValue) {
  auto n = make_node("Shape", 1, 1, {{"start", Attribute{int64_t{1}}}});
  auto r = infer_only(n, {ttype(DType::Float32, {P("N"), S(3), S(5)})}, {}, 15);
  EXPECT_EQ(r.types[0].dims[0], S(2));
  ASSERT_TRUE(r.values[0].defined());
  EXPECT_EQ(vals<int64_t>(r.values[0]), (std::vector<int64_t>{3, 5}));
  r = infer_only(make_node("Shape", 1, 1), {ttype(DType::Float32, {P("N"), S(3)})});
  EXPECT_FALSE(r.values[0].defined());
  EXPECT_EQ(r.types[0].dims[0], S(2));
}

TEST(TensorSize, ValueAndInfer) {
  auto out = run_op(make_node("Size", 1, 1), {iota_f({2, 3})});
  EXPECT_EQ(out[0].rank(), 0);
  EXPECT_EQ(vals<int64_t>(out[0])[0], 6);
  auto r = infer_only(make_node("Size", 1, 1), {ttype(DType::Float32, {S(4), S(0)})});
  ASSERT_TRUE(r.values[0].defined());
  EXPECT_EQ(vals<int64_t>(r.values[0])[0], 0);
  r = infer_only(make_node("Size", 1, 1), {ttype(DType::Float32, {P("N")})});
  EXPECT_FALSE(r.values[0].defined());
}

// ---------------- Constant / ConstantOfShape ----------------
TEST(TensorConstant, Attributes) {
  auto t = iota_f({2, 2});
  auto out = run_op(make_node("Constant", 0, 1, {{"value", Attribute{t}}}), {});
  EXPECT_EQ(vals<float>(out[0]), vals<float>(t));
  out = run_op(make_node("Constant", 0, 1, {{"value_float", Attribute{2.5f}}}), {});
  EXPECT_EQ(out[0].rank(), 0);
  EXPECT_EQ(vals<float>(out[0])[0], 2.5f);
  out = run_op(make_node("Constant", 0, 1, {{"value_ints", Attribute{std::vector<int64_t>{1, 2, 3}}}}), {});
  EXPECT_EQ(vals<int64_t>(out[0]), (std::vector<int64_t>{1, 2, 3}));
  out = run_op(make_node("Constant", 0, 1, {{"value_int", Attribute{int64_t{-4}}}}), {});
  EXPECT_EQ(vals<int64_t>(out[0])[0], -4);
  out = run_op(make_node("Constant", 0, 1, {{"value_floats", Attribute{std::vector<float>{1.f, 2.f}}}}), {});
  EXPECT_EQ(out[0].shape(), (Shape{2}));
  auto r = infer_only(make_node("Constant", 0, 1, {{"value_int", Attribute{int64_t{9}}}}), {});
  ASSERT_TRUE(r.values[0].defined());
  EXPECT_EQ(vals<int64_t>(r.values[0])[0], 9);
  try {
    run_op(make_node("Constant", 0, 1, {{"value_string", Attribute{std::string("a")}}}), {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Unsupported);
  }
  EXPECT_THROW(run_op(make_node("Constant", 0, 1), {}), Error);
}

TEST(TensorConstantOfShape, FillAndDefault) {
  auto out = run_op(make_node("ConstantOfShape", 1, 1), {i64v({2, 3})}, 17, true);
  EXPECT_EQ(out[0].dtype(), DType::Float32);
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  auto n = make_node("ConstantOfShape", 1, 1, {{"value", Attribute{i64v({7})}}});
  out = run_op(n, {i64v({3})});
  EXPECT_EQ(vals<int64_t>(out[0]), (std::vector<int64_t>{7, 7, 7}));
  out = run_op(n, {i64v({0})});
  EXPECT_EQ(out[0].shape(), (Shape{0}));
  out = run_op(n, {i64v({})});
  EXPECT_EQ(out[0].rank(), 0);
  EXPECT_EQ(vals<int64_t>(out[0])[0], 7);
  EXPECT_THROW(run_op(n, {i64v({-1})}), Error);
  auto r = infer_only(n, {ttype(DType::Int64, {S(3)})});
  EXPECT_EQ(r.types[0].dims.size(), 3u);
  EXPECT_EQ(r.types[0].dtype, DType::Int64);
}

// ---------------- Expand ----------------
TEST(TensorExpand, Bidirectional) {
  auto x = f32({1, 2, 3}, {3, 1});
  auto out = run_op(make_node("Expand", 2, 1), {x, i64v({2, 1, 2})}, 17, true);
  EXPECT_EQ(out[0].shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  out = run_op(make_node("Expand", 2, 1), {x, i64v({1})});
  EXPECT_EQ(out[0].shape(), (Shape{3, 1}));
  EXPECT_THROW(run_op(make_node("Expand", 2, 1), {x, i64v({2, 2})}), Error);
  Tensor s = i64v({1, 4});
  auto r = infer_only(make_node("Expand", 2, 1), {ttype(DType::Float32, {P("N"), S(1)}), ttype(DType::Int64, {S(2)})},
                      {nullptr, &s});
  EXPECT_EQ(r.types[0].dims[0], P("N"));
  EXPECT_EQ(r.types[0].dims[1], S(4));
}

// ---------------- Range ----------------
TEST(TensorRange, Dtypes) {
  auto out = run_op(make_node("Range", 3, 1), {Tensor::scalar<float>(1), Tensor::scalar<float>(5),
                                               Tensor::scalar<float>(2)}, 17, true);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{1, 3}));
  out = run_op(make_node("Range", 3, 1), {Tensor::scalar<int32_t>(10), Tensor::scalar<int32_t>(4),
                                          Tensor::scalar<int32_t>(-3)}, 17, true);
  EXPECT_EQ(vals<int32_t>(out[0]), (std::vector<int32_t>{10, 7}));
  out = run_op(make_node("Range", 3, 1), {Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(-3),
                                          Tensor::scalar<int64_t>(1)});
  EXPECT_EQ(out[0].shape(), (Shape{0}));
  out = run_op(make_node("Range", 3, 1), {Tensor::scalar<double>(0), Tensor::scalar<double>(1),
                                          Tensor::scalar<double>(0.3)});
  EXPECT_EQ(out[0].shape(), (Shape{4}));
  EXPECT_THROW(run_op(make_node("Range", 3, 1), {Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(3),
                                                 Tensor::scalar<int64_t>(0)}), Error);
}

}  // namespace
