// The Reduce* family (axes as attribute / input across opsets, keepdims, noop_with_empty_axes,
// empty reductions, integer dtypes) and ArgMax / ArgMin.
#include <cmath>
#include <limits>
#include <random>

#include "ops/test_nn_util.h"

namespace joule::testing::nn {
namespace {

Tensor x23() { return F({1, 2, 3, 4, 5, 6}, {2, 3}); }

TEST(NnReduce, SumAxesAttributeVsInput) {
  // opset 11: attribute; opset 13: input
  expect_values(run1("ReduceSum", {x23()}, {{"axes", Ints{1}}}, 11), {6, 15}, {2, 1});
  expect_values(run1("ReduceSum", {x23(), I64({1}, {1})}, {}, 13, true), {6, 15}, {2, 1});
  expect_values(run1("ReduceSum", {x23(), I64({-2}, {1})}, {{"keepdims", int64_t{0}}}, 13, true),
                {5, 7, 9}, {3});
  // no axes: everything (keepdims -> [1,1])
  expect_values(run1("ReduceSum", {x23()}, {}, 13), {21}, {1, 1});
  expect_values(
      run1("ReduceSum", {x23(), Tensor(DType::Int64, {0})}, {{"keepdims", int64_t{0}}}, 13), {21},
      {});
  // noop_with_empty_axes: identity
  expect_values(run1("ReduceSum", {x23()}, {{"noop_with_empty_axes", int64_t{1}}}, 13),
                {1, 2, 3, 4, 5, 6}, {2, 3});
}

TEST(NnReduce, MeanOpset18AxesInput) {
  expect_values(run1("ReduceMean", {x23()}, {{"axes", Ints{0}}}, 17), {2.5f, 3.5f, 4.5f}, {1, 3});
  expect_values(run1("ReduceMean", {x23(), I64({0}, {1})}, {}, 18, true), {2.5f, 3.5f, 4.5f},
                {1, 3});
  expect_values(run1("ReduceMean", {x23()}, {{"keepdims", int64_t{0}}}, 18), {3.5f}, {});
}

TEST(NnReduce, AllKinds) {
  Tensor x = F({1, -2, 3, -4, 5, -6}, {2, 3});
  Attrs a{{"axes", Ints{1}}, {"keepdims", int64_t{0}}};
  expect_values(run1("ReduceMax", {x}, a, 13), {3, 5}, {2});
  expect_values(run1("ReduceMin", {x}, a, 13), {-2, -6}, {2});
  expect_values(run1("ReduceProd", {x}, a, 13), {-6, 120}, {2});
  expect_values(run1("ReduceL1", {x}, a, 13), {6, 15}, {2});
  expect_values(run1("ReduceL2", {x}, a, 13), {std::sqrt(14.f), std::sqrt(77.f)}, {2});
  expect_values(run1("ReduceSumSquare", {x}, a, 13), {14, 77}, {2});
  expect_values(run1("ReduceLogSum", {F({1, 2, 3, 4}, {2, 2})}, a, 13),
                {std::log(3.f), std::log(7.f)}, {2});
  expect_values(run1("ReduceLogSumExp", {F({1, 2, 1000, 1000}, {2, 2})}, a, 13),
                {static_cast<float>(2 + std::log1p(std::exp(-1.0))),
                 static_cast<float>(1000 + std::log(2.0))},
                {2});
  expect_values(run1("ReduceMean", {x}, {{"axes", Ints{-1, 0}}}, 13), {-0.5f}, {1, 1});
}

TEST(NnReduce, IntegerDtypes) {
  Tensor xi = Tensor::from_vector<int32_t>({1, 2, 3, 4}, {2, 2});
  Tensor s = run1("ReduceSum", {xi}, {{"keepdims", int64_t{0}}}, 11);
  ASSERT_EQ(s.dtype(), DType::Int32);
  EXPECT_EQ(s.data<int32_t>()[0], 10);
  Tensor m = run1("ReduceMean", {xi}, {{"axes", Ints{1}}}, 11);
  EXPECT_EQ(m.data<int32_t>()[0], 1);  // integer mean truncates
  EXPECT_EQ(m.data<int32_t>()[1], 3);
  Tensor xl = Tensor::from_vector<int64_t>({-5, 7, 2, 9}, {4});
  EXPECT_EQ(run1("ReduceMax", {xl}, {}, 11).data<int64_t>()[0], 9);
  EXPECT_EQ(run1("ReduceMin", {xl}, {}, 11).data<int64_t>()[0], -5);
  EXPECT_EQ(run1("ReduceL1", {xl}, {}, 11).data<int64_t>()[0], 23);
  EXPECT_EQ(run1("ReduceProd", {xl}, {}, 11).data<int64_t>()[0], -630);
  Tensor xu = Tensor::from_vector<uint8_t>({3, 250}, {2});
  EXPECT_EQ(run1("ReduceMax", {xu}, {}, 13).data<uint8_t>()[0], 250);
}

TEST(NnReduce, EmptyReductions) {
  Tensor e(DType::Float32, {2, 0});
  Attrs a{{"axes", Ints{1}}, {"keepdims", int64_t{0}}};
  expect_values(run1("ReduceSum", {e}, a, 11), {0, 0}, {2});
  expect_values(run1("ReduceProd", {e}, a, 11), {1, 1}, {2});
  const float inf = std::numeric_limits<float>::infinity();
  expect_values(run1("ReduceMax", {e}, a, 11), {-inf, -inf}, {2});
  expect_values(run1("ReduceMin", {e}, a, 11), {inf, inf}, {2});
  expect_values(run1("ReduceLogSumExp", {e}, a, 11), {-inf, -inf}, {2});
  // reducing the non-empty axis of an empty tensor: empty result
  Tensor r = run1("ReduceSum", {e}, {{"axes", Ints{0}}}, 11);
  EXPECT_EQ(shape_str(r.shape()), "[1,0]");
}

TEST(NnReduce, HalfAndDouble) {
  Tensor h = run1("ReduceMean", {F({1, 2, 3, 4}, {4}).cast(DType::Float16)}, {}, 13);
  EXPECT_EQ(h.dtype(), DType::Float16);
  expect_values(h, {2.5f}, {1});
  Tensor d = run1("ReduceSumSquare", {Tensor::from_vector<double>({1, 2}, {2})}, {}, 13);
  EXPECT_DOUBLE_EQ(d.data<double>()[0], 5.0);
}

TEST(NnReduce, Errors) {
  EXPECT_THROW(run1("ReduceSum", {x23()}, {{"axes", Ints{2}}}, 11), Error);
  EXPECT_THROW(run1("ReduceMean", {x23(), I64({-3}, {1})}, {}, 18), Error);
  EXPECT_THROW(run1("ReduceMax", {Tensor::from_vector<bool>({true}, {1})}, {}, 13), Error);
}

TEST(NnReduce, InferUnknownAxes) {
  const ops::OpDef* def = ops::find_op("", "ReduceSum");
  ir::TensorType x = ir::TensorType::of(DType::Float32, {2, 3, 4}),
                 ax = ir::TensorType::of(DType::Int64, {1});
  for (int keep : {0, 1}) {
    auto node = make_node("ReduceSum", 2, 1, {{"keepdims", int64_t{keep}}});
    ops::InferContext ic{node, 13, {&x, &ax}, {nullptr, nullptr}, {}, {}};
    ic.output_types.resize(1);
    def->infer(ic);
    const auto& o = ic.output_types[0];
    EXPECT_EQ(o.has_shape, keep == 1);
    if (keep) {
      ASSERT_EQ(o.dims.size(), 3u);
      EXPECT_FALSE(o.dims[0].is_static());
    }
  }
  // a known constant axes input gives the exact shape
  auto node = make_node("ReduceSum", 2, 1, {{"keepdims", int64_t{0}}});
  Tensor axes = I64({1}, {1});
  ops::InferContext ic{node, 13, {&x, &ax}, {nullptr, &axes}, {}, {}};
  ic.output_types.resize(1);
  def->infer(ic);
  EXPECT_EQ(ic.output_types[0].str(), "float32[2,4]");
}

// Randomised: every kind over random axes subsets against a direct double computation.
TEST(NnReduce, RandomVsNaive) {
  const char* kinds[] = {"ReduceSum", "ReduceMean",      "ReduceMax",
                         "ReduceMin", "ReduceProd",      "ReduceL1",
                         "ReduceL2",  "ReduceLogSumExp", "ReduceSumSquare"};
  std::mt19937 rng(3);
  for (int iter = 0; iter < 200; ++iter) {
    const int rank = 1 + static_cast<int>(rng() % 4);
    Shape s;
    for (int d = 0; d < rank; ++d) s.push_back(1 + rng() % 4);
    Ints axes;
    std::vector<bool> red(rank, false);
    for (int d = 0; d < rank; ++d)
      if (rng() % 2) {
        axes.push_back(rng() % 2 ? d : d - rank);
        red[d] = true;
      }
    if (axes.empty()) red.assign(rank, true);
    const std::string kind = kinds[iter % 9];
    Tensor x = random_tensor(s, iter, 0.5f, 1.5f);
    const bool keep = rng() % 2;
    Tensor y = run1(kind, {x}, {{"axes", axes}, {"keepdims", int64_t{keep}}}, 11);
    // naive: accumulate per output index
    Shape ks = s;
    for (int d = 0; d < rank; ++d)
      if (red[d]) ks[d] = 1;
    const int64_t no = shape_numel(ks);
    std::vector<double> acc(no, kind == "ReduceProd"  ? 1.0
                                : kind == "ReduceMax" ? -1e30
                                : kind == "ReduceMin" ? 1e30
                                                      : 0.0);
    std::vector<double> cnt(no, 0);
    const auto st = shape_strides(ks);
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t rem = i, o = 0;
      for (int d = rank - 1; d >= 0; --d) {
        const int64_t v = rem % s[d];
        rem /= s[d];
        if (!red[d]) o += v * st[d];
      }
      const double v = x.data<float>()[i];
      double& a = acc[o];
      cnt[o] += 1;
      if (kind == "ReduceProd")
        a *= v;
      else if (kind == "ReduceMax")
        a = std::max(a, v);
      else if (kind == "ReduceMin")
        a = std::min(a, v);
      else if (kind == "ReduceL2" || kind == "ReduceSumSquare")
        a += v * v;
      else if (kind == "ReduceLogSumExp")
        a += std::exp(v);
      else
        a += std::abs(v);
    }
    std::vector<float> want;
    for (int64_t o = 0; o < no; ++o) {
      double v = acc[o];
      if (kind == "ReduceMean") v /= cnt[o];
      if (kind == "ReduceL2") v = std::sqrt(v);
      if (kind == "ReduceLogSumExp") v = std::log(v);
      want.push_back(static_cast<float>(v));
    }
    Shape ws;
    for (int d = 0; d < rank; ++d)
      if (!red[d] || keep) ws.push_back(ks[d]);
    expect_close(y, F(want, ws), 1e-5, 1e-5, kind + " iter " + std::to_string(iter));
    if (HasFailure()) return;
  }
}

// ---- ArgMax / ArgMin ----

std::vector<int64_t> ints_of(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::Int64);
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}

TEST(NnArgReduce, KeepdimsAxesAndTies) {
  Tensor x = F({2, 1, 2, 7, 3, 7}, {2, 3});
  Tensor y = run1("ArgMax", {x});
  EXPECT_EQ(shape_str(y.shape()), "[1,3]");
  EXPECT_EQ(ints_of(y), (Ints{1, 1, 1}));
  Tensor z = run1("ArgMax", {x}, {{"axis", int64_t{-1}}, {"keepdims", int64_t{0}}});
  EXPECT_EQ(shape_str(z.shape()), "[2]");
  EXPECT_EQ(ints_of(z), (Ints{0, 0}));
  EXPECT_EQ(ints_of(run1("ArgMax", {x}, {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}})),
            (Ints{2, 2}));
  EXPECT_EQ(ints_of(run1("ArgMin", {x}, {{"axis", int64_t{1}}})), (Ints{1, 1}));
  EXPECT_EQ(ints_of(run1("ArgMin", {F({1, 1, 0, 0}, {4})}, {{"select_last_index", int64_t{1}}})),
            (Ints{3}));
  EXPECT_EQ(ints_of(run1("ArgMin", {Tensor::from_vector<int32_t>({5, -1, 4}, {3})})), (Ints{1}));
  EXPECT_EQ(ints_of(run1("ArgMax", {F({1, 5, 2}, {3}).cast(DType::Float16)})), (Ints{1}));
  EXPECT_THROW(run1("ArgMax", {x}, {{"axis", int64_t{2}}}), Error);
  EXPECT_THROW(run1("ArgMax", {Tensor(DType::Float32, {2, 0})}, {{"axis", int64_t{1}}}), Error);
}

}  // namespace
}  // namespace joule::testing::nn
