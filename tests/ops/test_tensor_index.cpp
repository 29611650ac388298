// Tests for Transpose, Concat, Split, Slice, Gather, GatherElements, GatherND, ScatterND,
// ScatterElements, Scatter.
#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

#include "test_tensor_util.h"

using namespace joule;
using namespace joule::testing;
using ir::Attribute;

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// ---------------- Transpose ----------------
TEST(TensorTranspose, DefaultAndPerm) {
  auto x = iota_f({2, 3});
  auto out = run_op(make_node("Transpose", 1, 1), {x});
  EXPECT_EQ(out[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  auto n = make_node("Transpose", 1, 1, {{"perm", Attribute{std::vector<int64_t>{1, 2, 0}}}});
  out = run_op(n, {iota_f({2, 3, 4})});
  EXPECT_EQ(out[0].shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(vals<float>(out[0])[1], 12.f);  // out[0,0,1] = x[1,0,0]
  EXPECT_EQ(vals<float>(out[0])[23], 23.f);
  auto bad = make_node("Transpose", 1, 1, {{"perm", Attribute{std::vector<int64_t>{0, 0}}}});
  EXPECT_THROW(run_op(bad, {x}), Error);
  // bool and int64 work too (byte copy)
  Tensor b = Tensor::from_vector<bool>({true, false, false, true, true, false}, {2, 3});
  EXPECT_EQ(vals<bool>(run_op(make_node("Transpose", 1, 1), {b})[0]),
            (std::vector<bool>{true, true, false, true, false, false}));
  EXPECT_EQ(run_op(make_node("Transpose", 1, 1), {Tensor::scalar<float>(3)})[0].rank(), 0);
}

// The tiled path (input's last axis moved, both sides >= 4) against index arithmetic, on random
// shapes and permutations of rank 2 to 5, float32 and int64.
TEST(TensorTranspose, TiledMatchesNaiveOnRandomPermutations) {
  std::mt19937 rng(5);
  for (int t = 0; t < 60; ++t) {
    const size_t r = 2 + static_cast<size_t>(t % 4);
    Shape shape(r);
    for (auto& d : shape) d = std::uniform_int_distribution<int64_t>(1, r > 3 ? 9 : 37)(rng);
    std::vector<int64_t> perm(r);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    const Tensor x = iota_f(shape);
    const Tensor xi = x.cast(DType::Int64);
    auto n = make_node("Transpose", 1, 1, {{"perm", Attribute{perm}}});
    const Tensor y = run_op(n, {x})[0], yi = run_op(n, {xi})[0];
    const auto in_strides = shape_strides(shape);
    const auto out_strides = shape_strides(y.shape());
    for (int64_t o = 0; o < y.numel(); ++o) {
      int64_t rem = o, src = 0;
      for (size_t d = 0; d < r; ++d) {
        src += rem / out_strides[d] * in_strides[static_cast<size_t>(perm[d])];
        rem %= out_strides[d];
      }
      ASSERT_EQ(y.data<float>()[o], static_cast<float>(src)) << shape_str(shape) << " element " << o;
      ASSERT_EQ(yi.data<int64_t>()[o], src);
    }
  }
}

// ---------------- Concat ----------------
TEST(TensorConcat, AxesAndEmpty) {
  auto a = iota_f({2, 2}), b = f32({9, 8}, {2, 1});
  auto n = make_node("Concat", 2, 1, {{"axis", Attribute{int64_t{-1}}}});
  auto out = run_op(n, {a, b});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 1, 9, 2, 3, 8}));
  auto n0 = make_node("Concat", 3, 1, {{"axis", Attribute{int64_t{0}}}});
  out = run_op(n0, {i64v({1}), i64v({}), i64v({2, 3})});
  EXPECT_EQ(vals<int64_t>(out[0]), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_THROW(run_op(n0, {iota_f({2, 2}), iota_f({2, 3}), iota_f({1, 2})}), Error);
  EXPECT_THROW(run_op(make_node("Concat", 2, 1), {a, a}), Error);  // axis required
  auto r = infer_only(n, {ttype(DType::Float32, {P("N"), S(2)}), ttype(DType::Float32, {U(), S(3)})});
  EXPECT_EQ(r.types[0].dims[0], P("N"));
  EXPECT_EQ(r.types[0].dims[1], S(5));
}

// ---------------- Split ----------------
TEST(TensorSplit, VariantsByOpset) {
  auto x = iota_f({2, 6});
  auto n = make_node("Split", 2, 2, {{"axis", Attribute{int64_t{1}}}});
  auto out = run_op(n, {x, i64v({2, 4})}, 13, true);
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(vals<float>(out[1]), (std::vector<float>{2, 3, 4, 5, 8, 9, 10, 11}));
  auto eq = make_node("Split", 1, 3, {{"axis", Attribute{int64_t{-1}}}});
  out = run_op(eq, {x}, 13);
  EXPECT_EQ(out[2].shape(), (Shape{2, 2}));
  EXPECT_EQ(vals<float>(out[2]), (std::vector<float>{4, 5, 10, 11}));
  auto old = make_node("Split", 1, 2, {{"split", Attribute{std::vector<int64_t>{1, 1}}}});
  out = run_op(old, {x}, 11);
  EXPECT_EQ(out[1].shape(), (Shape{1, 6}));
  EXPECT_THROW(run_op(make_node("Split", 1, 4, {{"axis", Attribute{int64_t{1}}}}), {x}, 13), Error);
  auto n18 = make_node("Split", 1, 4, {{"axis", Attribute{int64_t{1}}}, {"num_outputs", Attribute{int64_t{4}}}});
  out = run_op(n18, {iota_f({1, 7})}, 18);
  EXPECT_EQ(out[0].shape(), (Shape{1, 2}));
  EXPECT_EQ(out[3].shape(), (Shape{1, 1}));
  EXPECT_EQ(vals<float>(out[3])[0], 6.f);
  EXPECT_THROW(run_op(n, {x, i64v({2, 3})}, 13), Error);
  out = run_op(make_node("Split", 2, 3), {Tensor(DType::Float32, {0}), i64v({0, 0, 0})}, 13);
  EXPECT_EQ(out[1].shape(), (Shape{0}));
}

// ---------------- Slice ----------------
TEST(TensorSlice, StepsAndClamping) {
  auto x = iota_f({10});
  auto n = make_node("Slice", 5, 1);
  auto out = run_op(n, {x, i64v({1}), i64v({8}), i64v({0}), i64v({3})}, 13, true);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{1, 4, 7}));
  out = run_op(n, {x, i64v({-1}), i64v({kMin}), i64v({0}), i64v({-4})}, 13, true);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{9, 5, 1}));
  out = run_op(n, {x, i64v({kMax}), i64v({kMin}), i64v({0}), i64v({-1})}, 13);
  EXPECT_EQ(out[0].numel(), 10);
  EXPECT_EQ(vals<float>(out[0])[0], 9.f);
  out = run_op(n, {x, i64v({20}), i64v({kMax}), i64v({0}), i64v({1})}, 13);
  EXPECT_EQ(out[0].shape(), (Shape{0}));
  out = run_op(n, {x, i64v({2}), i64v({1}), i64v({0}), i64v({kMin})}, 13);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{2}));
  EXPECT_THROW(run_op(n, {x, i64v({0}), i64v({1}), i64v({0}), i64v({0})}, 13), Error);
}

TEST(TensorSlice, AxesDefaultsAndOldOpset) {
  auto x = iota_f({3, 4});
  auto n3 = make_node("Slice", 3, 1);
  auto out = run_op(n3, {x, i64v({1, 1}), i64v({3, -1})}, 13);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{5, 6, 9, 10}));
  auto n4 = make_node("Slice", 4, 1);
  out = run_op(n4, {x, i64v({2}), i64v({4}), i64v({-1})}, 13);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{2, 3, 6, 7, 10, 11}));
  EXPECT_THROW(run_op(make_node("Slice", 4, 1), {x, i64v({0, 0}), i64v({1, 1}), i64v({1, -1})}, 13), Error);
  auto old = make_node("Slice", 1, 1, {{"starts", Attribute{std::vector<int64_t>{1}}},
                                       {"ends", Attribute{std::vector<int64_t>{2}}},
                                       {"axes", Attribute{std::vector<int64_t>{0}}}});
  out = run_op(old, {x}, 9);
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{4, 5, 6, 7}));
  // inference: full slice keeps a symbol; unknown starts keep rank
  Tensor s = i64v({0}), e = i64v({kMax}), a = i64v({0});
  auto r = infer_only(n4, {ttype(DType::Float32, {P("N"), S(4)}), ttype(DType::Int64, {S(1)}),
                           ttype(DType::Int64, {S(1)}), ttype(DType::Int64, {S(1)})}, {nullptr, &s, &e, &a});
  EXPECT_EQ(r.types[0].dims[0], P("N"));
  r = infer_only(n4, {ttype(DType::Float32, {P("N"), S(4)}), ttype(DType::Int64, {S(1)}),
                      ttype(DType::Int64, {S(1)}), ttype(DType::Int64, {S(1)})}, {nullptr, nullptr, nullptr, &a});
  EXPECT_FALSE(r.types[0].dims[0].is_static());
  EXPECT_EQ(r.types[0].dims[1], S(4));
}

// ---------------- Gather family ----------------
TEST(TensorGather, AxisAndNegative) {
  auto x = iota_f({3, 2});
  auto out = run_op(make_node("Gather", 2, 1), {x, i64({-1, 0, 1, 1}, {2, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{4, 5, 0, 1, 2, 3, 2, 3}));
  auto n1 = make_node("Gather", 2, 1, {{"axis", Attribute{int64_t{1}}}});
  out = run_op(n1, {x, Tensor::scalar<int32_t>(1)});
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{1, 3, 5}));
  EXPECT_THROW(run_op(n1, {x, i64v({2})}), Error);
  // shape-subgraph case: gather a scalar out of a shape vector
  out = run_op(make_node("Gather", 2, 1), {i64v({1, 3, 224}), Tensor::scalar<int64_t>(0)}, 17, true);
  EXPECT_EQ(out[0].rank(), 0);
  EXPECT_EQ(vals<int64_t>(out[0])[0], 1);
}

TEST(TensorGatherElements, Axes) {
  auto x = f32({1, 2, 3, 4}, {2, 2});
  auto n = make_node("GatherElements", 2, 1, {{"axis", Attribute{int64_t{1}}}});
  auto out = run_op(n, {x, i64({0, 0, 1, 0}, {2, 2})});
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{1, 1, 4, 3}));
  auto n0 = make_node("GatherElements", 2, 1);
  out = run_op(n0, {x, i64({-1, 0, 1, 1, 0, 0}, {3, 2})});
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{3, 2, 3, 4, 1, 2}));
  EXPECT_THROW(run_op(n0, {x, i64({2, 0}, {1, 2})}), Error);
  EXPECT_THROW(run_op(n0, {x, i64({0, 0}, {2})}), Error);
}

TEST(TensorGatherND, BatchDims) {
  auto x = iota_f({2, 2});
  auto out = run_op(make_node("GatherND", 2, 1), {x, i64({0, 0, 1, 1}, {2, 2})});
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 3}));
  out = run_op(make_node("GatherND", 2, 1), {x, i64({1, 0}, {2, 1})});
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{2, 3, 0, 1}));
  auto x3 = iota_f({2, 2, 2});
  auto nb = make_node("GatherND", 2, 1, {{"batch_dims", Attribute{int64_t{1}}}});
  out = run_op(nb, {x3, i64({1, -2}, {2, 1})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_THROW(run_op(make_node("GatherND", 2, 1), {x, i64({0, 0, 0}, {1, 3})}), Error);
}

// ---------------- Scatter family ----------------
TEST(TensorScatterND, Reductions) {
  auto x = f32({1, 2, 3, 4}, {4});
  auto idx = i64({1, 3, 1}, {3, 1});
  auto upd = f32({10, 20, 30}, {3});
  auto out = run_op(make_node("ScatterND", 3, 1), {x, i64({1, 3}, {2, 1}), f32({10, 20}, {2})});
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{1, 10, 3, 20}));
  EXPECT_EQ(vals<float>(x), (std::vector<float>{1, 2, 3, 4}));  // input untouched
  auto add = make_node("ScatterND", 3, 1, {{"reduction", Attribute{std::string("add")}}});
  EXPECT_EQ(vals<float>(run_op(add, {x, idx, upd}, 16)[0]), (std::vector<float>{1, 42, 3, 24}));
  auto mul = make_node("ScatterND", 3, 1, {{"reduction", Attribute{std::string("mul")}}});
  EXPECT_EQ(vals<float>(run_op(mul, {x, idx, upd}, 16)[0]), (std::vector<float>{1, 600, 3, 80}));
  auto mx = make_node("ScatterND", 3, 1, {{"reduction", Attribute{std::string("max")}}});
  EXPECT_EQ(vals<float>(run_op(mx, {x, idx, upd}, 18)[0]), (std::vector<float>{1, 30, 3, 20}));
  EXPECT_THROW(run_op(mx, {x, idx, upd}, 16), Error);
  // slices
  auto m = iota_f({2, 2});
  out = run_op(make_node("ScatterND", 3, 1), {m, i64({1}, {1, 1}), f32({7, 8}, {1, 2})});
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 1, 7, 8}));
  EXPECT_THROW(run_op(make_node("ScatterND", 3, 1), {m, i64({1}, {1, 1}), f32({7}, {1, 1})}), Error);
}

TEST(TensorScatterElements, AxisReductionAndAlias) {
  auto x = Tensor(DType::Float32, {2, 3});
  auto n = make_node("ScatterElements", 3, 1, {{"axis", Attribute{int64_t{1}}}});
  auto out = run_op(n, {x, i64({2, -3}, {2, 1}), f32({5, 6}, {2, 1})});
  EXPECT_EQ(vals<float>(out[0]), (std::vector<float>{0, 0, 5, 6, 0, 0}));
  auto add = make_node("ScatterElements", 3, 1, {{"reduction", Attribute{std::string("add")}}});
  out = run_op(add, {i64({1, 2}, {2}), i64({0, 0, 1}, {3}), i64({10, 20, 30}, {3})}, 16);
  EXPECT_EQ(vals<int64_t>(out[0]), (std::vector<int64_t>{31, 32}));
  auto old = make_node("Scatter", 3, 1, {{"axis", Attribute{int64_t{1}}}});
  out = run_op(old, {x, i64({0}, {1, 1}), f32({9}, {1, 1})}, 10);
  EXPECT_EQ(vals<float>(out[0])[0], 9.f);
  EXPECT_THROW(run_op(n, {x, i64({3}, {1, 1}), f32({5}, {1, 1})}), Error);
}

}  // namespace
