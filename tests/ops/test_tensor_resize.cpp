// Tests for Resize and Upsample.
#include "test_tensor_util.h"

using namespace joule;
using namespace joule::testing;
using ir::Attribute;

namespace {

Attribute str(const char* s) { return Attribute{std::string(s)}; }
Tensor scales(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector(v, {n});
}

TEST(TensorResize, NearestUpsampleAnyDtype) {
  auto n = make_node("Resize", 3, 1, {{"mode", str("nearest")}});
  auto x = i64({1, 2, 3, 4}, {1, 1, 2, 2});
  auto out = run_op(n, {x, Tensor(), scales({1, 1, 2, 1.5f})}, 13, true);
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 4, 3}));
  // half_pixel + round_prefer_floor: cols 0,1,1 ... rows 0,0,1,1
  EXPECT_EQ(vals<int64_t>(out[0]), (std::vector<int64_t>{1, 1, 2, 1, 1, 2, 3, 3, 4, 3, 3, 4}));
}

TEST(TensorResize, NearestModes) {
  auto x = f32({10, 20, 30, 40}, {4});
  // downsample 4 -> 2 with asymmetric: source 0, 2
  auto floor = make_node("Resize", 3, 1, {{"coordinate_transformation_mode", str("asymmetric")},
                                          {"nearest_mode", str("floor")}});
  EXPECT_EQ(vals<float>(run_op(floor, {x, Tensor(), scales({0.5f})}, 13)[0]), (std::vector<float>{10, 30}));
  // upsample 4 -> 6 asymmetric: source x/1.5 = 0, .67, 1.33, 2, 2.67, 3.33
  auto ceil = make_node("Resize", 3, 1, {{"coordinate_transformation_mode", str("asymmetric")},
                                         {"nearest_mode", str("ceil")}});
  EXPECT_EQ(vals<float>(run_op(ceil, {x, Tensor(), scales({1.5f})}, 13)[0]),
            (std::vector<float>{10, 20, 30, 30, 40, 40}));
  auto rpc = make_node("Resize", 3, 1, {{"coordinate_transformation_mode", str("asymmetric")},
                                        {"nearest_mode", str("round_prefer_ceil")}});
  // scale 2: source 0, .5, 1, 1.5, ... -> .5 rounds up
  EXPECT_EQ(vals<float>(run_op(rpc, {f32({1, 2}, {2}), Tensor(), scales({2})}, 13)[0]),
            (std::vector<float>{1, 2, 2, 2}));
  auto rpf = make_node("Resize", 3, 1, {{"coordinate_transformation_mode", str("asymmetric")}});
  EXPECT_EQ(vals<float>(run_op(rpf, {f32({1, 2}, {2}), Tensor(), scales({2})}, 13)[0]),
            (std::vector<float>{1, 1, 2, 2}));
}

TEST(TensorResize, LinearAndAlignCorners) {
  auto x = f32({0, 10}, {2});
  auto lin = make_node("Resize", 4, 1, {{"mode", str("linear")}});
  // half_pixel, sizes 4: source -0.25, 0.25, 0.75, 1.25 -> 0, 2.5, 7.5, 10
  auto out = run_op(lin, {x, Tensor(), Tensor(), i64v({4})}, 13, true);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 2.5f, 7.5f, 10}));
  auto ac = make_node("Resize", 4, 1, {{"mode", str("linear")},
                                       {"coordinate_transformation_mode", str("align_corners")}});
  out = run_op(ac, {x, Tensor(), Tensor(), i64v({3})}, 13);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 5, 10}));
  // 2-D bilinear: corners kept with align_corners
  auto x2 = f32({0, 1, 2, 3}, {2, 2});
  out = run_op(ac, {x2, Tensor(), Tensor(), i64v({3, 3})}, 13);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 0.5f, 1, 1, 1.5f, 2, 2, 2.5f, 3}));
  EXPECT_THROW(run_op(lin, {i64v({1, 2}), Tensor(), Tensor(), i64v({4})}, 13), Error);
}

TEST(TensorResize, CubicAndCrop) {
  auto cubic = make_node("Resize", 4, 1, {{"mode", str("cubic")}});
  auto x = f32({1, 2, 3, 4}, {4});
  // identity size: cubic reproduces the input
  auto out = run_op(cubic, {x, Tensor(), Tensor(), i64v({4})}, 13);
  EXPECT_EQ(vals<float>(out[0]), vals<float>(x));
  auto crop = make_node("Resize", 4, 1, {{"mode", str("linear")},
                                         {"coordinate_transformation_mode", str("tf_crop_and_resize")},
                                         {"extrapolation_value", Attribute{-1.f}}});
  // roi [0.5, 1.5] over 0..3: source 1.5, 3.0, 4.5 (outside -> -1)
  out = run_op(crop, {x, f32({0.5f, 1.5f}, {2}), Tensor(), i64v({3})}, 13);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{2.5f, 4, -1}));
}

TEST(TensorResize, InferenceAndErrors) {
  auto n = make_node("Resize", 3, 1);
  Tensor sc = scales({1, 1, 2, 2});
  auto r = infer_only(n, {ttype(DType::Float32, {P("N"), S(3), S(4), S(5)}), ir::TensorType{},
                          ttype(DType::Float32, {S(4)})}, {nullptr, nullptr, &sc}, 13);
  EXPECT_EQ(r.types[0].dims[0], P("N"));
  EXPECT_EQ(r.types[0].dims[2], S(8));
  EXPECT_EQ(r.types[0].dims[3], S(10));
  r = infer_only(n, {ttype(DType::Float32, {P("N"), S(3)}), ir::TensorType{}, ttype(DType::Float32, {S(2)})}, {}, 13);
  EXPECT_EQ(r.types[0].dims.size(), 2u);
  EXPECT_FALSE(r.types[0].dims[1].is_static());
  EXPECT_THROW(run_op(n, {f32({1, 2}, {2}), Tensor(), scales({1, 2})}, 13), Error);
  EXPECT_THROW(run_op(make_node("Resize", 1, 1), {f32({1, 2}, {2})}, 13), Error);
  auto bad = make_node("Resize", 3, 1, {{"mode", str("area")}});
  EXPECT_THROW(run_op(bad, {f32({1, 2}, {2}), Tensor(), scales({2})}, 13), Error);
}

TEST(TensorUpsample, NearestAndLinear) {
  auto n9 = make_node("Upsample", 2, 1);
  auto out = run_op(n9, {f32({1, 2}, {1, 2}), scales({2, 2})}, 9);
  EXPECT_EQ(out[0].shape(), (Shape{2, 4}));
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2}));
  auto n7 = make_node("Upsample", 1, 1, {{"mode", str("linear")}, {"scales", Attribute{std::vector<float>{1, 2}}}});
  out = run_op(n7, {f32({1, 3}, {1, 2})}, 7);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{1, 2, 3, 3}));  // asymmetric: 0, .5, 1, 1.5
}

}  // namespace
