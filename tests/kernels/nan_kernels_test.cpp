// NaN and Inf through the kernels as PyTorch and the ONNX spec have them: a NaN in the input
// stays NaN through the activation epilogues of every conv and matmul algorithm (oneDNN's
// included: joule applies ReLU and Clip after its primitive), max pooling, Max/Min
// reductions and Softmax, on the reference kernels and on every fast algorithm that runs the node.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "graph_builder.h"
#include "joule/kernels/algorithm.h"
#include "kernel_test_util.h"

namespace joule {
namespace {

using testing::GraphBuilder;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor seeded(const Shape& s, uint32_t seed) {
  Tensor t(DType::Float32, s);
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

int64_t nan_count(const Tensor& t) {
  int64_t n = 0;
  for (int64_t i = 0; i < t.numel(); ++i) n += std::isnan(t.data<float>()[i]);
  return n;
}

// Algorithms whose transforms mix a tile (Winograd) or a whole plane (FFT) of the input into
// every output of it: a NaN spreads to those outputs, a superset of the reference's.
bool spreads_nan(const std::string& a) { return a == "fft" || a.rfind("winograd", 0) == 0; }
// Runs `g` on the reference kernels and on each algorithm of `op_class` (forced); every run must
// have NaN exactly where the reference has (at least there, for spreads_nan), and the reference
// at least `min_nans`.
void expect_nan_kept(const ir::Graph& g, const runtime::TensorMap& in, const std::string& op_class, const std::string& node,
                     int64_t min_nans) {
  const Tensor ref = testing::run_with_algo(g, in, {"reference"}, node).out.at("y");
  ASSERT_GE(nan_count(ref), min_nans) << op_class << ": the reference kernel lost the NaN";
  int ran = 0;
  for (const kernels::Algorithm* a : kernels::algorithms_for(op_class)) {
    runtime::SessionOptions o;
    o.threads = 1;
    o.algo.add(op_class + "=" + a->name + ",reference");
    runtime::Session s(ir::Graph(g), o);
    const Tensor y = s.run(in).at("y");
    std::string chosen;
    for (size_t i = 0; i < s.num_steps(); ++i)
      if (s.step_node(i).name == node) chosen = s.step_node(i).meta["software"].value("algorithm", "");
    if (chosen != a->name) continue;  // (does not support the node)
    ++ran;
    for (int64_t i = 0; i < y.numel(); ++i) {
      const bool got = std::isnan(y.data<float>()[i]), want = std::isnan(ref.data<float>()[i]);
      if (spreads_nan(a->name))
        ASSERT_TRUE(got || !want) << a->name << " element " << i << " lost the NaN";
      else
        ASSERT_EQ(got, want) << a->name << " element " << i;
    }
  }
  EXPECT_GT(ran, 0) << "no " << op_class << " algorithm ran the node";
}

// A fused node's activation attributes: Clip to [0, 6], LeakyRelu with slope 0.1, the rest none.
std::map<std::string, ir::Attribute> activation(const std::string& act) {
  return {{"activation", act},
          {"activation_params", act == "Clip"        ? std::vector<float>{0.f, 6.f}
                                : act == "LeakyRelu" ? std::vector<float>{0.1f}
                                                     : std::vector<float>{}}};
}

TEST(NanKernels, ConvEpiloguesKeepNaN) {
  for (const char* act : {"Relu", "Clip", "LeakyRelu", "Sigmoid", "SiLU", "HardSwish"}) {
    auto attrs = activation(act);
    attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
    GraphBuilder b;
    b.input("x", DType::Float32, {1, 8, 10, 10})
        .init("w", seeded({8, 8, 3, 3}, 1))
        .init("b", seeded({8}, 2))
        .node("FusedConv", {"x", "w", "b"}, {"y"}, attrs, "conv")
        .output("y");
    ir::Graph g = b.build();
    g.nodes.back()->domain = "joule";
    g.opsets["joule"] = 1;
    Tensor x = seeded({1, 8, 10, 10}, 3);
    x.data<float>()[5 * 10 + 5] = kNaN;  // one NaN: a 3x3 patch of every output channel reads it
    SCOPED_TRACE(act);
    expect_nan_kept(g, {{"x", x}}, "conv", "conv", 9 * 8);
  }
}

TEST(NanKernels, MatMulEpiloguesKeepNaN) {
  for (const char* act : {"Relu", "Clip", "LeakyRelu", "Gelu"}) {
    GraphBuilder b;
    b.input("x", DType::Float32, {4, 16})
        .init("w", seeded({16, 24}, 1))
        .init("bias", seeded({24}, 2))
        .node("FusedMatMul", {"x", "w", "bias"}, {"y"}, activation(act), "mm")
        .output("y");
    ir::Graph g = b.build();
    g.nodes.back()->domain = "joule";
    g.opsets["joule"] = 1;
    Tensor x = seeded({4, 16}, 3);
    x.data<float>()[17] = kNaN;  // row 1: all 24 outputs
    SCOPED_TRACE(act);
    expect_nan_kept(g, {{"x", x}}, "matmul", "mm", 24);
  }
}

TEST(NanKernels, PoolingReductionsAndSoftmaxKeepNaN) {
  Tensor x = seeded({1, 2, 6, 6}, 4);
  x.data<float>()[0] = kNaN;       // first window of channel 0
  x.data<float>()[36 + 7] = kInf;  // channel 1
  {
    GraphBuilder b;
    b.input("x", DType::Float32, {1, 2, 6, 6})
        .node("MaxPool", {"x"}, {"y"}, {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{3, 3}}}, "pool")
        .output("y");
    expect_nan_kept(b.build(), {{"x", x}}, "pool", "pool", 1);
  }
  {
    GraphBuilder b;
    b.input("x", DType::Float32, {1, 2, 6, 6}).node("GlobalMaxPool", {"x"}, {"y"}, {}, "pool").output("y");
    expect_nan_kept(b.build(), {{"x", x}}, "pool", "pool", 1);
  }
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    GraphBuilder b;
    b.input("x", DType::Float32, {1, 2, 6, 6}).node(op, {"x"}, {"y"}, {{"axes", std::vector<int64_t>{2, 3}}}, "r").output("y");
    const Tensor y = testing::run_with_algo(b.build(), {{"x", x}}, {"reference"}, "r").out.at("y");
    EXPECT_TRUE(std::isnan(y.data<float>()[0])) << op;
    EXPECT_FALSE(std::isnan(y.data<float>()[1])) << op;
  }
  {
    GraphBuilder b;
    b.input("x", DType::Float32, {1, 2, 6, 6}).node("Softmax", {"x"}, {"y"}, {}, "sm").output("y");
    expect_nan_kept(b.build(), {{"x", x}}, "softmax", "sm", 6);  // the NaN's row; the +Inf row too
  }
}

}  // namespace
}  // namespace joule
