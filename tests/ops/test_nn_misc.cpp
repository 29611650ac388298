// Einsum, CumSum and TopK.
#include <random>

#include "ops/test_nn_util.h"

namespace joule::testing::nn {
namespace {

Tensor einsum(const std::string& eq, std::vector<Tensor> in) {
  return run1("Einsum", in, {{"equation", eq}});
}

TEST(NnEinsum, MatmulExplicitAndImplicit) {
  Tensor a = F({1, 2, 3, 4, 5, 6}, {2, 3}), b = F({1, 2, 3, 4, 5, 6}, {3, 2});
  expect_values(einsum("ij,jk->ik", {a, b}), {22, 28, 49, 64}, {2, 2});
  expect_values(einsum("ij,jk", {a, b}), {22, 28, 49, 64}, {2, 2});
  // implicit output is alphabetical: "kj,ji" -> "ik"
  expect_values(einsum("kj,ji", {a, b}), {22, 49, 28, 64}, {2, 2});
  expect_values(einsum("ij, jk -> ki", {a, b}), {22, 49, 28, 64}, {2, 2});
}

TEST(NnEinsum, SingleOperand) {
  Tensor m = F({1, 2, 3, 4}, {2, 2});
  expect_values(einsum("ii->i", {m}), {1, 4}, {2});
  expect_values(einsum("ii", {m}), {5}, {});  // trace
  expect_values(einsum("ij->ji", {m}), {1, 3, 2, 4}, {2, 2});
  expect_values(einsum("ij->", {m}), {10}, {});
  expect_values(einsum("ij->j", {m}), {4, 6}, {2});
  expect_values(einsum("ji", {m}), {1, 3, 2, 4}, {2, 2});  // implicit: output "ij"
  Tensor bd = F({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  expect_values(einsum("...ii->...i", {bd}), {1, 4, 5, 8}, {2, 2});
}

TEST(NnEinsum, VectorsAndSums) {
  Tensor u = F({1, 2, 3}, {3}), v = F({4, 5, 6}, {3});
  expect_values(einsum("i,i", {u, v}), {32}, {});
  expect_values(einsum("i,j->ij", {u, F({1, 10}, {2})}), {1, 10, 2, 20, 3, 30}, {3, 2});
  Tensor a = F({1, 2, 3, 4}, {2, 2});
  expect_values(einsum("ij,ij->", {a, a}), {30}, {});
  expect_values(einsum("ij,ij->ij", {a, a}), {1, 4, 9, 16}, {2, 2});
  // a label only in the first operand and not in the output is summed: sum_i a[i,j] * b[j]
  expect_values(einsum("ij,j->j", {a, F({1, 10}, {2})}), {4, 60}, {2});
}

TEST(NnEinsum, BatchedAndBroadcastEllipsis) {
  Tensor a = random_tensor({3, 2, 4}, 1), b = random_tensor({3, 4, 5}, 2);
  expect_close(einsum("bij,bjk->bik", {a, b}), run1("MatMul", {a, b}), 1e-5, 1e-5);
  Tensor b1 = random_tensor({1, 4, 5}, 3);
  expect_close(einsum("...ij,...jk->...ik", {a, b1}), run1("MatMul", {a, b1}), 1e-5, 1e-5);
  Tensor b2 = random_tensor({4, 5}, 4);
  expect_close(einsum("...ij,jk->...ik", {a, b2}), run1("MatMul", {a, b2}), 1e-5, 1e-5);
  // attention-style: "bhqd,bhkd->bhqk"
  Tensor q = random_tensor({2, 3, 4, 8}, 5), k = random_tensor({2, 3, 6, 8}, 6);
  Tensor kt(DType::Float32, {2, 3, 8, 6});
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t d = 0; d < 8; ++d)
        kt.data<float>()[(t * 8 + d) * 6 + i] = k.data<float>()[(t * 6 + i) * 8 + d];
  expect_close(einsum("bhqd,bhkd->bhqk", {q, k}), run1("MatMul", {q, kt}), 1e-5, 1e-5);
}

TEST(NnEinsum, ThreeOperandsAndInts) {
  Tensor a = random_tensor({2, 3}, 1), b = random_tensor({3, 4}, 2), c = random_tensor({4, 2}, 3);
  Tensor ab = run1("MatMul", {a, b});
  expect_close(einsum("ij,jk,kl->il", {a, b, c}), run1("MatMul", {ab, c}), 1e-5, 1e-5);
  Tensor i = Tensor::from_vector<int64_t>({1, 2, 3, 4}, {2, 2});
  Tensor y = einsum("ij,jk->ik", {i, i});
  ASSERT_EQ(y.dtype(), DType::Int64);
  EXPECT_EQ(y.data<int64_t>()[3], 22);
  Tensor t = einsum("ii", {i});
  EXPECT_EQ(t.data<int64_t>()[0], 5);
}

TEST(NnEinsum, Errors) {
  Tensor a = F({1, 2, 3, 4}, {2, 2});
  EXPECT_THROW(einsum("ij,jk->ik", {a}), Error);                        // term count
  EXPECT_THROW(einsum("ijk->i", {a}), Error);                           // rank
  EXPECT_THROW(einsum("i1->i", {a}), Error);                            // bad char
  EXPECT_THROW(einsum("ij->k", {a}), Error);                            // unknown output label
  EXPECT_THROW(einsum("ij->ii", {a}), Error);                           // repeated output label
  EXPECT_THROW(einsum("ij,jk->ik", {a, F({1, 2, 3}, {3, 1})}), Error);  // size mismatch
  EXPECT_THROW(einsum("i..j->i", {a}), Error);                          // malformed ellipsis
}

TEST(NnEinsum, InferAndCost) {
  const ops::OpDef* def = ops::find_op("", "Einsum");
  auto node = make_node("Einsum", 2, 1, {{"equation", std::string("bij,bjk->bik")}});
  ir::TensorType a, b = ir::TensorType::of(DType::Float32, {1, 4, 5});
  a.dtype = DType::Float32;
  a.has_shape = true;
  a.dims = {ir::Dim{-1, "B"}, ir::Dim{2, ""}, ir::Dim{4, ""}};
  ops::InferContext ic{node, 17, {&a, &b}, {nullptr, nullptr}, {}, {}};
  ic.output_types.resize(1);
  def->infer(ic);
  EXPECT_EQ(ic.output_types[0].str(), "float32[B,2,5]");
  ops::CostContext cc{node,
                      {{3, 2, 4}, {3, 4, 5}},
                      {{3, 2, 5}},
                      {DType::Float32, DType::Float32},
                      {DType::Float32}};
  EXPECT_DOUBLE_EQ(ops::node_cost(*def, cc).macs, 3.0 * 2 * 4 * 5);
}

// ---- CumSum ----

TEST(NnCumSum, ExclusiveReverse) {
  Tensor x = F({1, 2, 3, 4, 5}, {5});
  Tensor ax = I64({0}, {});
  expect_values(run1("CumSum", {x, ax}), {1, 3, 6, 10, 15}, {5});
  expect_values(run1("CumSum", {x, ax}, {{"exclusive", int64_t{1}}}), {0, 1, 3, 6, 10}, {5});
  expect_values(run1("CumSum", {x, ax}, {{"reverse", int64_t{1}}}), {15, 14, 12, 9, 5}, {5});
  expect_values(run1("CumSum", {x, ax}, {{"reverse", int64_t{1}}, {"exclusive", int64_t{1}}}),
                {14, 12, 9, 5, 0}, {5});
}

TEST(NnCumSum, AxesAndDtypes) {
  Tensor x = F({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_values(run1("CumSum", {x, I64({0}, {1})}), {1, 2, 3, 5, 7, 9}, {2, 3});
  expect_values(run1("CumSum", {x, Tensor::from_vector<int32_t>({-1}, {})}), {1, 3, 6, 4, 9, 15},
                {2, 3});
  Tensor xi = Tensor::from_vector<int32_t>({1, 2, 3}, {3});
  Tensor yi = run1("CumSum", {xi, I64({0}, {})});
  ASSERT_EQ(yi.dtype(), DType::Int32);
  EXPECT_EQ(yi.data<int32_t>()[2], 6);
  Tensor yd = run1("CumSum", {Tensor::from_vector<double>({0.5, 0.25}, {2}), I64({0}, {})});
  EXPECT_DOUBLE_EQ(yd.data<double>()[1], 0.75);
  EXPECT_THROW(run1("CumSum", {x, I64({2}, {})}), Error);
  EXPECT_THROW(run1("CumSum", {x, I64({0, 1}, {2})}), Error);
}

// ---- TopK ----

std::vector<int64_t> ints_of(const Tensor& t) {
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}

TEST(NnTopK, LargestSmallestAxis) {
  Tensor x = F({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
  auto node = make_node("TopK", 2, 2);
  auto out = run_op(node, {x, I64({3}, {1})}, 17, true);
  expect_values(out[0], {3, 2, 1, 7, 6, 5, 11, 10, 9}, {3, 3});
  EXPECT_EQ(ints_of(out[1]), (Ints{3, 2, 1, 3, 2, 1, 3, 2, 1}));
  auto small = make_node("TopK", 2, 2, {{"largest", int64_t{0}}, {"axis", int64_t{0}}});
  auto out2 = run_op(small, {x, I64({2}, {1})});
  expect_values(out2[0], {0, 1, 2, 3, 4, 5, 6, 7}, {2, 4});
  EXPECT_EQ(ints_of(out2[1]), (Ints{0, 0, 0, 0, 1, 1, 1, 1}));
}

TEST(NnTopK, TiesKeepLowerIndexFirst) {
  auto node = make_node("TopK", 2, 2);
  auto out = run_op(node, {F({1, 3, 3, 2, 3}, {5}), I64({3}, {1})});
  expect_values(out[0], {3, 3, 3}, {3});
  EXPECT_EQ(ints_of(out[1]), (Ints{1, 2, 4}));
  auto small = make_node("TopK", 2, 2, {{"largest", int64_t{0}}});
  auto out2 = run_op(small, {F({2, 1, 1, 0}, {4}), I64({3}, {1})});
  EXPECT_EQ(ints_of(out2[1]), (Ints{3, 1, 2}));
}

TEST(NnTopK, Opset1AttributeIntsAndErrors) {
  auto node = make_node("TopK", 1, 2, {{"k", int64_t{1}}});
  auto out = run_op(node, {F({1, 5, 2}, {3})}, 1);
  expect_values(out[0], {5}, {1});
  auto n2 = make_node("TopK", 2, 2);
  auto oi = run_op(n2, {Tensor::from_vector<int32_t>({4, -1, 9}, {3}), I64({2}, {1})});
  EXPECT_EQ(oi[0].data<int32_t>()[0], 9);
  EXPECT_EQ(ints_of(oi[1]), (Ints{2, 0}));
  auto zero = run_op(n2, {F({1, 2}, {2}), I64({0}, {1})});
  EXPECT_EQ(shape_str(zero[0].shape()), "[0]");
  EXPECT_THROW(run_op(n2, {F({1, 2}, {2}), I64({3}, {1})}), Error);
  EXPECT_THROW(run_op(n2, {F({1, 2}, {2}), I64({-1}, {1})}), Error);
}

TEST(NnTopK, InferUnknownK) {
  const ops::OpDef* def = ops::find_op("", "TopK");
  auto node = make_node("TopK", 2, 2);
  ir::TensorType x = ir::TensorType::of(DType::Float32, {2, 10}),
                 k = ir::TensorType::of(DType::Int64, {1});
  ops::InferContext ic{node, 17, {&x, &k}, {nullptr, nullptr}, {}, {}};
  ic.output_types.resize(2);
  def->infer(ic);
  EXPECT_EQ(ic.output_types[0].dims[0].value, 2);
  EXPECT_FALSE(ic.output_types[0].dims[1].is_static());
  EXPECT_EQ(ic.output_types[1].dtype, DType::Int64);
}

}  // namespace
}  // namespace joule::testing::nn
