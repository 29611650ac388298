// LoRA adapters (the adapted model equals the model at the start; merged weights equal the
// adapted model's outputs) and the fake-quantization gradient (straight-through with clipping,
// LSQ's and PACT's scale gradients) against hand-computed values.
#include <gtest/gtest.h>

#include "graph_builder.h"
#include "joule/runtime/session.h"
#include "joule/train/lora.h"
#include "test_tensors.h"

using namespace joule;
using joule::testing::GraphBuilder;
using joule::testing::random_tensor;
using Ints = std::vector<int64_t>;

namespace {

// x [2, 3, 6, 6] -> Conv -> Flatten -> Gemm(transB) -> MatMul -> MatMul(Transpose(W)) -> y
ir::Graph adaptable() {
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 3, 6, 6})
      .init("cw", random_tensor({4, 3, 3, 3}, 1))
      .init("cb", random_tensor({4}, 2))
      .init("gw", random_tensor({5, 36}, 3))
      .init("gb", random_tensor({5}, 4))
      .init("mw", random_tensor({5, 7}, 5))
      .node("Conv", {"x", "cw", "cb"}, {"c"}, {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}, "conv")
      .node("Flatten", {"c"}, {"f"})
      .node("Gemm", {"f", "gw", "gb"}, {"g"}, {{"transB", int64_t{1}}, {"alpha", 0.5f}}, "gemm")
      .node("MatMul", {"g", "mw"}, {"h"}, {}, "matmul")
      .init("tw", random_tensor({3, 7}, 6))
      .node("Transpose", {"tw"}, {"twt"}, {{"perm", Ints{1, 0}}})
      .node("MatMul", {"h", "twt"}, {"y"}, {}, "linear")
      .output("y");
  return b.build();
}

Tensor run(const ir::Graph& g, const Tensor& x) {
  runtime::SessionOptions o;
  o.threads = 1;
  return runtime::Session(g, o).run({{"x", x}}).at("y");
}

double max_diff(const Tensor& a, const Tensor& b) {
  double d = 0;
  for (int64_t i = 0; i < a.numel(); ++i) d = std::max(d, std::abs(double(a.data<float>()[i]) - b.data<float>()[i]));
  return d;
}

}  // namespace

TEST(Lora, StartsAsTheModelAndMergesIntoItsWeights) {
  const ir::Graph g = adaptable();
  train::LoraOptions o;
  o.rank = 2;
  o.alpha = 3;
  train::LoraGraph lg = train::add_lora(g, o);
  ASSERT_EQ(lg.adapters.size(), 4u);
  EXPECT_EQ(lg.trainable().size(), 8u);
  const Tensor x = random_tensor({2, 3, 6, 6}, 9);
  EXPECT_EQ(max_diff(run(lg.graph, x), run(g, x)), 0.0);  // B starts at zero
  // Trained adapters: random B too; the merged model computes what the adapted one does.
  uint32_t seed = 20;
  for (const train::LoraAdapter& a : lg.adapters)
    lg.graph.initializers[a.b] = random_tensor(lg.graph.initializers[a.b].shape(), seed++);
  const Tensor adapted = run(lg.graph, x);
  const ir::Graph merged = train::merge_lora(g, lg);
  EXPECT_EQ(merged.nodes.size(), g.nodes.size());
  EXPECT_GT(max_diff(adapted, run(g, x)), 1e-2);
  EXPECT_LT(max_diff(run(merged, x), adapted), 1e-4);
  // Only some layers, by regex.
  o.target = "^gemm$";
  EXPECT_EQ(train::add_lora(g, o).adapters.size(), 1u);
  o.target = "nothing";
  EXPECT_THROW(train::add_lora(g, o), Error);
}

TEST(FakeQuantGrad, StraightThroughAndLearnedScales) {
  // int8 asymmetric per tensor: scale 0.5, zero point -10 -> representable [-59, 68.5] (codes -128..127)
  const std::vector<float> xs = {-70.f, -3.2f, 0.26f, 4.9f, 80.f};
  const std::vector<float> dys = {1.f, 2.f, 3.f, 4.f, 5.f};
  for (const char* method : {"ste", "lsq", "pact", "tqt"}) {
    GraphBuilder b;
    b.input("dy", DType::Float32, {5})
        .input("x", DType::Float32, {5})
        .init("s", Tensor::scalar<float>(0.5f))
        .init("z", Tensor::scalar<int32_t>(-10))
        .node("FakeQuantGrad", {"dy", "x", "s", "z"}, {"dx", "ds"},
              {{"format", std::string("int")}, {"bits", int64_t{8}}, {"symmetric", int64_t{0}},
               {"signed", int64_t{1}}, {"qat", std::string(method)}},
              "g");
    b.g.nodes.back()->domain = "joule";
    b.output("dx").output("ds");
    runtime::Session s(b.build(), {});
    const auto out = s.run({{"dy", Tensor::from_vector(dys, {5})}, {"x", Tensor::from_vector(xs, {5})}});
    const float* dx = out.at("dx").data<float>();
    EXPECT_EQ(dx[0], 0.f) << method;  // clipped below
    EXPECT_EQ(dx[4], 0.f) << method;  // clipped above
    for (int i = 1; i < 4; ++i) EXPECT_EQ(dx[i], dys[i]) << method;
    const double clip = 1 * (-128 - -10) + 5 * (127 - -10);  // dY times the clip point's code
    double inside = 0;
    for (int i = 1; i < 4; ++i) inside += dys[i] * (std::nearbyint(xs[i] / 0.5) - xs[i] / 0.5);
    const std::string m = method;
    const double want = m == "ste" ? 0 : m == "pact" ? clip : m == "tqt" ? clip + inside : (clip + inside) / std::sqrt(5.0 * 127);
    EXPECT_NEAR(out.at("ds").data<float>()[0], want, 1e-4 * std::max(1.0, std::abs(want))) << method;
  }
}
