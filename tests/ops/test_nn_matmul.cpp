// MatMul and Gemm: hand-computed cases, numpy 1-D / broadcasting rules, dtypes, errors and
// randomised comparisons against a naive triple loop.
#include <random>

#include "ops/test_nn_util.h"

namespace joule::testing::nn {
namespace {

// Naive batched matmul over already-broadcast operands (j-outer order, different from i-k-j).
Tensor naive_matmul(const Tensor& a, const Tensor& b, const Shape& batch) {
  const int64_t M = a.dim(-2), K = a.dim(-1), N = b.dim(-1);
  Shape ys = batch;
  ys.push_back(M), ys.push_back(N);
  Tensor y(DType::Float32, ys);
  const int64_t nb = shape_numel(batch);
  const Shape ab(a.shape().begin(), a.shape().end() - 2),
      bb(b.shape().begin(), b.shape().end() - 2);
  for (int64_t t = 0; t < nb; ++t) {
    // batch index -> operand batch offsets with size-1 broadcasting, right-aligned
    int64_t rem = t, ao = 0, bo = 0, am = 1, bm = 1;
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
      const int64_t v = rem % batch[d];
      rem /= batch[d];
      const int64_t da = d - static_cast<int64_t>(batch.size() - ab.size());
      const int64_t db = d - static_cast<int64_t>(batch.size() - bb.size());
      if (da >= 0) {
        ao += (ab[da] == 1 ? 0 : v) * am;
        am *= ab[da];
      }
      if (db >= 0) {
        bo += (bb[db] == 1 ? 0 : v) * bm;
        bm *= bb[db];
      }
    }
    for (int64_t j = 0; j < N; ++j)
      for (int64_t i = 0; i < M; ++i) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += static_cast<double>(a.data<float>()[(ao * M + i) * K + k]) *
               b.data<float>()[(bo * K + k) * N + j];
        y.data<float>()[(t * M + i) * N + j] = static_cast<float>(s);
      }
  }
  return y;
}

TEST(NnMatMul, TwoD) {
  Tensor y = run1("MatMul", {F({1, 2, 3, 4, 5, 6}, {2, 3}), F({1, 2, 3, 4, 5, 6}, {3, 2})});
  expect_values(y, {22, 28, 49, 64}, {2, 2});
}

TEST(NnMatMul, OneDOperands) {
  Tensor m = F({1, 2, 3, 4, 5, 6}, {2, 3});
  // vector x matrix: [2] x [2,3] -> [3]
  expect_values(run1("MatMul", {F({1, 1}, {2}), m}), {5, 7, 9}, {3});
  // matrix x vector: [2,3] x [3] -> [2]
  expect_values(run1("MatMul", {m, F({1, 0, -1}, {3})}), {-2, -2}, {2});
  // vector x vector -> scalar
  expect_values(run1("MatMul", {F({1, 2, 3}, {3}), F({4, 5, 6}, {3})}), {32}, {});
  // batched matrix x vector: [2,2,3] x [3] -> [2,2]
  Tensor bm = F({1, 2, 3, 4, 5, 6, 1, 1, 1, 2, 2, 2}, {2, 2, 3});
  expect_values(run1("MatMul", {bm, F({1, 1, 1}, {3})}), {6, 15, 3, 6}, {2, 2});
  // vector x batched matrix: [3] x [2,3,1] -> [2,1]
  expect_values(run1("MatMul", {F({1, 1, 1}, {3}), F({1, 2, 3, 4, 5, 6}, {2, 3, 1})}), {6, 15},
                {2, 1});
}

TEST(NnMatMul, BatchBroadcast) {
  // [2,1,2,2] x [3,2,2] -> [2,3,2,2]
  Tensor a = random_tensor({2, 1, 2, 2}, 1), b = random_tensor({3, 2, 2}, 2);
  Tensor y = run1("MatMul", {a, b});
  expect_close(y, naive_matmul(a.reshaped({2, 1, 2, 2}), b, {2, 3}), 1e-5, 1e-5);
}

TEST(NnMatMul, IntegerAndDouble) {
  Tensor a = Tensor::from_vector<int32_t>({1, 2, 3, 4}, {2, 2});
  Tensor y = run1("MatMul", {a, a});
  ASSERT_EQ(y.dtype(), DType::Int32);
  EXPECT_EQ((std::vector<int32_t>(y.data<int32_t>(), y.data<int32_t>() + 4)),
            (std::vector<int32_t>{7, 10, 15, 22}));
  Tensor b = Tensor::from_vector<int64_t>({1, 2, 3, 4}, {2, 2});
  Tensor yb = run1("MatMul", {b, b});
  EXPECT_EQ(yb.data<int64_t>()[3], 22);
  Tensor d = Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2});
  Tensor yd = run1("MatMul", {d, d});
  EXPECT_EQ(yd.dtype(), DType::Float64);
  EXPECT_DOUBLE_EQ(yd.data<double>()[1], 10.0);
  Tensor h = F({1, 2, 3, 4}, {2, 2}).cast(DType::Float16);
  Tensor yh = run1("MatMul", {h, h});
  EXPECT_EQ(yh.dtype(), DType::Float16);
  expect_values(yh, {7, 10, 15, 22}, {2, 2});
}

TEST(NnMatMul, EmptyDims) {
  Tensor y = run1("MatMul", {Tensor(DType::Float32, {2, 0}), Tensor(DType::Float32, {0, 3})});
  expect_values(y, {0, 0, 0, 0, 0, 0}, {2, 3});
  Tensor z = run1("MatMul", {Tensor(DType::Float32, {0, 4}), Tensor(DType::Float32, {4, 3})});
  EXPECT_EQ(shape_str(z.shape()), "[0,3]");
}

TEST(NnMatMul, Errors) {
  EXPECT_THROW(run1("MatMul", {F({1, 2, 3, 4, 5, 6}, {2, 3}), F({1, 2, 3, 4, 5, 6}, {2, 3})}),
               Error);
  EXPECT_THROW(run1("MatMul", {random_tensor({2, 2, 2}, 1), random_tensor({3, 2, 2}, 2)}), Error);
  EXPECT_THROW(run1("MatMul", {Tensor::scalar(1.f), F({1, 2}, {2})}), Error);
  EXPECT_THROW(run1("MatMul", {F({1, 2}, {1, 2}), Tensor::from_vector<double>({1, 2}, {2, 1})}),
               Error);
}

TEST(NnMatMul, InferSymbolic) {
  const ops::OpDef* def = ops::find_op("", "MatMul");
  auto node = make_node("MatMul", 2, 1);
  ir::TensorType a, b = ir::TensorType::of(DType::Float32, {768, 64});
  a.dtype = DType::Float32;
  a.has_shape = true;
  a.dims = {ir::Dim{-1, "B"}, ir::Dim{-1, "S"}, ir::Dim{768, ""}};
  ops::InferContext ic{node, 17, {&a, &b}, {nullptr, nullptr}, {}, {}};
  ic.output_types.resize(1);
  def->infer(ic);
  const auto& o = ic.output_types[0];
  ASSERT_EQ(o.dims.size(), 3u);
  EXPECT_EQ(o.dims[0].param, "B");
  EXPECT_EQ(o.dims[1].param, "S");
  EXPECT_EQ(o.dims[2].value, 64);
}

TEST(NnMatMul, RandomVsNaive) {
  std::mt19937 rng(7);
  auto ri = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 60; ++iter) {
    const int64_t M = ri(1, 40), K = ri(1, 300), N = ri(1, 40);
    Shape batch, ab, bb;
    const int nbd = ri(0, 2);
    for (int d = 0; d < nbd; ++d) {
      const int64_t s = ri(1, 3);
      batch.push_back(s);
      ab.push_back(ri(0, 2) == 0 ? 1 : s);
      bb.push_back(ri(0, 2) == 0 ? 1 : s);
    }
    if (nbd > 0 && ri(0, 1)) bb.erase(bb.begin());  // rank mismatch
    for (size_t d = 0; d < batch.size(); ++d) {
      const int64_t bd = static_cast<int64_t>(d) - static_cast<int64_t>(batch.size() - bb.size());
      batch[d] = std::max(ab[d], bd >= 0 ? bb[static_cast<size_t>(bd)] : 1);
    }
    Shape as = ab, bs = bb;
    as.push_back(M), as.push_back(K), bs.push_back(K), bs.push_back(N);
    Tensor a = random_tensor(as, 3 * iter + 1), b = random_tensor(bs, 3 * iter + 2);
    expect_close(run1("MatMul", {a, b}), naive_matmul(a, b, batch), 1e-4, 1e-4,
                 "iter " + std::to_string(iter));
    if (HasFailure()) return;
  }
}

TEST(NnMatMul, Cost) {
  const ops::OpDef* def = ops::find_op("", "MatMul");
  auto node = make_node("MatMul", 2, 1);
  ops::CostContext cc{node,
                      {{4, 8, 16}, {16, 32}},
                      {{4, 8, 32}},
                      {DType::Float32, DType::Float32},
                      {DType::Float32}};
  const ops::Cost c = ops::node_cost(*def, cc);
  EXPECT_DOUBLE_EQ(c.macs, 4.0 * 8 * 32 * 16);
  EXPECT_DOUBLE_EQ(c.flops, 2 * c.macs);
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (512 + 512 + 1024));
}

// ---- Gemm ----

TEST(NnGemm, AllAttributes) {
  // A^T: A is [K=2, M=3]; B^T: B is [N=2, K=2]; C [1, N] broadcast
  Tensor A = F({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor B = F({1, 0, 1, 1}, {2, 2});
  Tensor C = F({10, 20}, {1, 2});
  Tensor y = run1("Gemm", {A, B, C},
                  {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 2.f}, {"beta", 0.5f}});
  // A^T = [[1,4],[2,5],[3,6]], B^T = [[1,1],[0,1]] -> A^T B^T = [[1,5],[2,7],[3,9]]
  expect_values(y, {2 + 5, 10 + 10, 4 + 5, 14 + 10, 6 + 5, 18 + 10}, {3, 2});
}

TEST(NnGemm, BiasShapesAndOptionalC) {
  Tensor A = F({1, 2, 3, 4}, {2, 2}), B = F({1, 0, 0, 1}, {2, 2});
  expect_values(run1("Gemm", {A, B}), {1, 2, 3, 4}, {2, 2});
  expect_values(run1("Gemm", {A, B, F({1}, {1})}), {2, 3, 4, 5}, {2, 2});          // [1]
  expect_values(run1("Gemm", {A, B, Tensor::scalar(1.f)}), {2, 3, 4, 5}, {2, 2});  // scalar
  expect_values(run1("Gemm", {A, B, F({1, 2}, {2})}), {2, 4, 4, 6}, {2, 2});       // [N]
  expect_values(run1("Gemm", {A, B, F({1, 2}, {2, 1})}), {2, 3, 5, 6}, {2, 2});    // [M,1]
  expect_values(run1("Gemm", {A, B, F({1, 2, 3, 4}, {2, 2})}, {{"beta", 0.f}}), {1, 2, 3, 4},
                {2, 2});
  // before opset 11 C is required
  EXPECT_THROW(run1("Gemm", {A, B}, {}, 9), Error);
  EXPECT_THROW(run1("Gemm", {A, B, F({1, 2, 3}, {3})}), Error);
  EXPECT_THROW(run1("Gemm", {A, F({1, 2, 3}, {3, 1})}), Error);
  EXPECT_THROW(run1("Gemm", {F({1, 2}, {2}), B}), Error);
}

TEST(NnGemm, IntAndRandom) {
  Tensor A = Tensor::from_vector<int64_t>({1, 2, 3, 4}, {2, 2});
  Tensor y = run1("Gemm", {A, A, Tensor::from_vector<int64_t>({1}, {1})});
  EXPECT_EQ(y.data<int64_t>()[3], 23);
  std::mt19937 rng(5);
  for (int iter = 0; iter < 20; ++iter) {
    const int64_t M = rng() % 20 + 1, K = rng() % 50 + 1, N = rng() % 20 + 1;
    const bool ta = rng() % 2, tb = rng() % 2;
    Tensor a = random_tensor(ta ? Shape{K, M} : Shape{M, K}, iter),
           b = random_tensor(tb ? Shape{N, K} : Shape{K, N}, iter + 100);
    Tensor c = random_tensor({M, N}, iter + 200);
    Tensor got =
        run1("Gemm", {a, b, c},
             {{"transA", int64_t{ta}}, {"transB", int64_t{tb}}, {"alpha", 0.5f}, {"beta", 2.f}});
    Tensor want(DType::Float32, {M, N});
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += static_cast<double>(a.data<float>()[ta ? k * M + i : i * K + k]) *
               b.data<float>()[tb ? j * K + k : k * N + j];
        want.data<float>()[i * N + j] =
            static_cast<float>(0.5 * s + 2.0 * c.data<float>()[i * N + j]);
      }
    expect_close(got, want, 1e-4, 1e-4, "iter " + std::to_string(iter));
  }
}

}  // namespace
}  // namespace joule::testing::nn
