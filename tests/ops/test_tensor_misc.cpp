// Tests for Pad, Tile, Identity, Dropout, DepthToSpace, SpaceToDepth, EyeLike, OneHot, Trilu,
// NonZero, Compress, ReverseSequence, and the data-movement cost.
#include "joule/ops/util.h"
#include "test_tensor_util.h"

using namespace joule;
using namespace joule::testing;
using ir::Attribute;

namespace {

Attribute mode(const char* m) { return Attribute{std::string(m)}; }

// ---------------- Pad ----------------
TEST(TensorPad, ConstantWithValueAndCrop) {
  auto x = f32({1, 2, 3, 4}, {2, 2});
  auto out = run_op(make_node("Pad", 3, 1), {x, i64v({0, 1, 1, 0}), Tensor::scalar<float>(9)}, 13, true);
  EXPECT_EQ(out[0].shape(), (Shape{3, 3}));
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{9, 1, 2, 9, 3, 4, 9, 9, 9}));
  out = run_op(make_node("Pad", 2, 1), {x, i64v({-1, 0, 0, 1})}, 13);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{3, 4, 0}));
  EXPECT_THROW(run_op(make_node("Pad", 2, 1), {x, i64v({0, 1})}, 13), Error);
  EXPECT_THROW(run_op(make_node("Pad", 2, 1), {x, i64v({-3, 0, 0, 0})}, 13), Error);
}

TEST(TensorPad, ReflectEdgeWrap) {
  auto x = f32({1, 2, 3}, {3});
  auto out = run_op(make_node("Pad", 2, 1, {{"mode", mode("reflect")}}), {x, i64v({2, 2})}, 13);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{3, 2, 1, 2, 3, 2, 1}));
  out = run_op(make_node("Pad", 2, 1, {{"mode", mode("edge")}}), {x, i64v({2, 1})}, 13);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{1, 1, 1, 2, 3, 3}));
  out = run_op(make_node("Pad", 2, 1, {{"mode", mode("wrap")}}), {x, i64v({1, 2})}, 19);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{3, 1, 2, 3, 1, 2}));
  EXPECT_THROW(run_op(make_node("Pad", 2, 1, {{"mode", mode("bogus")}}), {x, i64v({1, 1})}, 13), Error);
}

TEST(TensorPad, OldAttrAndAxesInput) {
  auto x = i64({1, 2, 3, 4}, {2, 2});
  auto old = make_node("Pad", 1, 1, {{"pads", Attribute{std::vector<int64_t>{0, 0, 0, 1}}},
                                     {"value", Attribute{5.f}}});
  auto out = run_op(old, {x}, 2);
  EXPECT_EQ(vals<int64_t>(out[0]), (std::vector<int64_t>{1, 2, 5, 3, 4, 5}));
  auto n18 = make_node("Pad", 4, 1);
  out = run_op(n18, {x, i64v({1, 0}), Tensor::scalar<int64_t>(7), i64v({-2})}, 18);
  EXPECT_EQ(vals<int64_t>(out[0]), (std::vector<int64_t>{7, 7, 1, 2, 3, 4}));
  auto r = infer_only(make_node("Pad", 2, 1), {ttype(DType::Float32, {P("N"), S(3)}), ttype(DType::Int64, {S(4)})});
  EXPECT_EQ(r.types[0].dims.size(), 2u);
}

// ---------------- Tile ----------------
TEST(TensorTile, Repeats) {
  auto x = f32({1, 2}, {1, 2});
  auto out = run_op(make_node("Tile", 2, 1), {x, i64v({2, 2})}, 13, true);
  EXPECT_EQ(out[0].shape(), (Shape{2, 4}));
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{1, 2, 1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(run_op(make_node("Tile", 2, 1), {x, i64v({0, 1})})[0].shape(), (Shape{0, 2}));
  EXPECT_THROW(run_op(make_node("Tile", 2, 1), {x, i64v({2})}), Error);
}

// ---------------- Identity / Dropout ----------------
TEST(TensorIdentity, SharesValue) {
  auto x = iota_f({3});
  auto out = run_op(make_node("Identity", 1, 1), {x});
  EXPECT_EQ(vals<float>(out[0]), vals<float>(x));
}

TEST(TensorDropout, InferenceAndTrainingMode) {
  auto x = iota_f({2, 2});
  auto out = run_op(make_node("Dropout", 1, 2), {x}, 13);
  EXPECT_EQ(vals<float>(out[0]), vals<float>(x));
  EXPECT_EQ(out[1].dtype(), DType::Bool);
  EXPECT_EQ(vals<bool>(out[1]), (std::vector<bool>{true, true, true, true}));
  out = run_op(make_node("Dropout", 1, 2), {x}, 7);
  EXPECT_EQ(out[1].dtype(), DType::Float32);
  auto n = make_node("Dropout", 3, 1);
  out = run_op(n, {x, Tensor::scalar<float>(0.f), Tensor::scalar<bool>(true)}, 13);
  EXPECT_EQ(vals<float>(out[0]), vals<float>(x));
  out = run_op(n, {x, Tensor::scalar<float>(0.5f), Tensor::scalar<bool>(false)}, 13);
  EXPECT_EQ(vals<float>(out[0]), vals<float>(x));
  // Training mode with ratio 0.5: each element 0 or 2x (more in test_signal_misc.cpp).
  out = run_op(n, {x, Tensor::scalar<float>(0.5f), Tensor::scalar<bool>(true)}, 13);
  for (int64_t i = 0; i < 4; ++i) {
    const float y = out[0].data<float>()[i], xi = x.data<float>()[i];
    EXPECT_TRUE(y == 0.f || y == 2.f * xi) << y;
  }
}

// ---------------- DepthToSpace / SpaceToDepth ----------------
TEST(TensorDepthToSpace, DcrAndCrd) {
  auto x = iota_f({1, 4, 1, 1});
  auto dcr = make_node("DepthToSpace", 1, 1, {{"blocksize", Attribute{int64_t{2}}}});
  auto out = run_op(dcr, {x});
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 1, 2, 3}));
  auto x8 = iota_f({1, 8, 1, 1});
  out = run_op(dcr, {x8});  // DCR: depth-major: channel c = (i*b + j)*C' + c'
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7}));
  auto crd = make_node("DepthToSpace", 1, 1, {{"blocksize", Attribute{int64_t{2}}}, {"mode", mode("CRD")}});
  out = run_op(crd, {x8});  // CRD: channel c = c'*b*b + i*b + j
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_THROW(run_op(dcr, {iota_f({1, 3, 1, 1})}), Error);
}

TEST(TensorSpaceToDepth, RoundTrip) {
  auto x = iota_f({1, 2, 4, 6});
  auto s2d = make_node("SpaceToDepth", 1, 1, {{"blocksize", Attribute{int64_t{2}}}});
  auto d2s = make_node("DepthToSpace", 1, 1, {{"blocksize", Attribute{int64_t{2}}}});
  auto mid = run_op(s2d, {x});
  EXPECT_EQ(mid[0].shape(), (Shape{1, 8, 2, 3}));
  EXPECT_EQ(vals<float>(mid[0])[6], 24.f);   // channel 1 = input channel 1 at offset (0,0)
  EXPECT_EQ(vals<float>(mid[0])[12], 1.f);   // channel 2 = input channel 0 at offset (0,1)
  auto back = run_op(d2s, {mid[0]});
  EXPECT_EQ(vals<float>(back[0]), vals<float>(x));
  EXPECT_THROW(run_op(s2d, {iota_f({1, 1, 3, 4})}), Error);
}

// ---------------- EyeLike / OneHot / Trilu ----------------
TEST(TensorEyeLike, DtypeAndK) {
  auto n = make_node("EyeLike", 1, 1, {{"k", Attribute{int64_t{1}}}, {"dtype", Attribute{int64_t{7}}}});
  auto out = run_op(n, {Tensor(DType::Float32, {2, 3})});
  EXPECT_EQ(out[0].dtype(), DType::Int64);
  EXPECT_EQ(vals<int64_t>(out[0]), (std::vector<int64_t>{0, 1, 0, 0, 0, 1}));
  out = run_op(make_node("EyeLike", 1, 1), {Tensor(DType::Int32, {2, 2})});
  EXPECT_EQ(vals<int32_t>(out[0]), (std::vector<int32_t>{1, 0, 0, 1}));
  EXPECT_THROW(run_op(make_node("EyeLike", 1, 1), {Tensor(DType::Int32, {2})}), Error);
}

TEST(TensorOneHot, AxisAndNegative) {
  auto n = make_node("OneHot", 3, 1);
  auto out = run_op(n, {i64v({0, -1, 5}), Tensor::scalar<int64_t>(3), f32({0, 1}, {2})}, 11, true);
  EXPECT_EQ(out[0].shape(), (Shape{3, 3}));
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0}));
  auto n0 = make_node("OneHot", 3, 1, {{"axis", Attribute{int64_t{0}}}});
  out = run_op(n0, {i64v({1, 0}), Tensor::scalar<float>(2), i64v({5, 7})}, 11);
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(vals<int64_t>(out[0]), (std::vector<int64_t>{5, 7, 7, 5}));
}

TEST(TensorTrilu, UpperLowerK) {
  auto x = iota_f({3, 3});
  auto out = run_op(make_node("Trilu", 1, 1), {x});
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 1, 2, 0, 4, 5, 0, 0, 8}));
  auto low = make_node("Trilu", 2, 1, {{"upper", Attribute{int64_t{0}}}});
  out = run_op(low, {x, Tensor::scalar<int64_t>(-1)});
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 0, 0, 3, 0, 0, 6, 7, 0}));
  out = run_op(make_node("Trilu", 2, 1), {x, Tensor::scalar<int64_t>(10)});
  EXPECT_EQ(vals<float>(out[0]), std::vector<float>(9, 0.f));
  EXPECT_THROW(run_op(make_node("Trilu", 1, 1), {iota_f({3})}), Error);
}

// ---------------- NonZero / Compress / ReverseSequence ----------------
TEST(TensorNonZero, Indices) {
  auto out = run_op(make_node("NonZero", 1, 1), {f32({1, 0, 0, -2}, {2, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(vals<int64_t>(out[0]), (std::vector<int64_t>{0, 1, 0, 1}));
  out = run_op(make_node("NonZero", 1, 1), {Tensor::from_vector<bool>({false, true, true}, {3})});
  EXPECT_EQ(vals<int64_t>(out[0]), (std::vector<int64_t>{1, 2}));
  auto r = infer_only(make_node("NonZero", 1, 1), {ttype(DType::Float32, {S(2), S(2)})});
  EXPECT_EQ(r.types[0].dims[0], S(2));
  EXPECT_FALSE(r.types[0].dims[1].is_static());
}

TEST(TensorCompress, AxisAndFlat) {
  auto x = iota_f({3, 2});
  auto cond = Tensor::from_vector<bool>({false, true}, {2});
  auto n = make_node("Compress", 2, 1, {{"axis", Attribute{int64_t{-2}}}});
  auto out = run_op(n, {x, cond});
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{2, 3}));
  auto flat = make_node("Compress", 2, 1);
  out = run_op(flat, {x, Tensor::from_vector<bool>({true, false, false, false, false, true}, {6})});
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 5}));
  EXPECT_THROW(run_op(n, {x, Tensor::from_vector<bool>({false, false, false, true}, {4})}), Error);
}

TEST(TensorReverseSequence, TimeAndBatchAxis) {
  auto x = iota_f({3, 2});  // [time, batch]
  auto n = make_node("ReverseSequence", 2, 1);
  auto out = run_op(n, {x, i64v({3, 2})});
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{4, 3, 2, 1, 0, 5}));
  auto nb = make_node("ReverseSequence", 2, 1, {{"time_axis", Attribute{int64_t{1}}}, {"batch_axis", Attribute{int64_t{0}}}});
  out = run_op(nb, {iota_f({2, 3}), i64v({1, 3})});
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 1, 2, 5, 4, 3}));
  EXPECT_THROW(run_op(n, {x, i64v({4, 1})}), Error);
}

// ---------------- Cost ----------------
TEST(TensorCost, DataMovementHasNoFlops) {
  auto node = make_node("Transpose", 1, 1);
  ops::CostContext c{node, {{2, 3}}, {{3, 2}}, {DType::Float32}, {DType::Float32}};
  const ops::OpDef* def = ops::find_op("", "Transpose");
  ASSERT_NE(def, nullptr);
  auto cost = ops::node_cost(*def, c);
  EXPECT_EQ(cost.flops, 0);
  EXPECT_EQ(cost.bytes, 48);
}

}  // namespace
