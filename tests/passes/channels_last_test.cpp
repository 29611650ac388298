// channels_last on float convs: a chain of convs runs N,H,W,C with Transposes only at its edges
// and computes what the N,C,H,W graph computes (fast kernels and reference); a lone conv and the
// convs the predicate (the user's --algo) refuses stay N,C,H,W; AlgoSpec decides by the first
// choice and, under guess/auto, by the estimates.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "graph_builder.h"
#include "joule/core/cpu_features.h"
#include "joule/kernels/select.h"
#include "joule/passes/infer_shapes.h"
#include "joule/passes/pass.h"
#include "joule/runtime/session.h"
#include "kernels/kernel_test_util.h"
#include "test_tensors.h"

using namespace joule;
using joule::testing::GraphBuilder;
using joule::testing::random_tensor;
using Ints = std::vector<int64_t>;

namespace {

// An inverted residual block (MobileNetV2): 1x1 expand + Clip, 3x3 depthwise + Clip, 1x1
// project, residual Add, then a GlobalAveragePool that stays N,C,H,W.
ir::Graph inverted_residual() {
  const std::map<std::string, ir::Attribute> pad1 = {{"pads", Ints{1, 1, 1, 1}}, {"group", int64_t{24}}};
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 8, 14, 14})
      .init("w1", random_tensor({24, 8, 1, 1}, 1, -0.4f, 0.4f))
      .init("w2", random_tensor({24, 1, 3, 3}, 2, -0.4f, 0.4f))
      .init("b2", random_tensor({24}, 3))
      .init("w3", random_tensor({8, 24, 1, 1}, 4, -0.3f, 0.3f))
      .init("lo", Tensor::scalar(0.f))
      .init("hi", Tensor::scalar(6.f))
      .node("Conv", {"x", "w1"}, {"e"}, {}, "expand")
      .node("Clip", {"e", "lo", "hi"}, {"e6"})
      .node("Conv", {"e6", "w2", "b2"}, {"d"}, pad1, "depthwise")
      .node("Clip", {"d", "lo", "hi"}, {"d6"})
      .node("Conv", {"d6", "w3"}, {"p"}, {}, "project")
      .node("Add", {"p", "x"}, {"r"})
      .node("GlobalAveragePool", {"r"}, {"pool"})
      .output("r")
      .output("pool");
  return b.build();
}

int count(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (auto& node : g.nodes) n += node->op_type == op;
  return n;
}

void expect_same_outputs(const ir::Graph& a, const ir::Graph& b, const std::string& algo) {
  runtime::SessionOptions oa, ob;
  oa.threads = ob.threads = 1;
  ob.algo.add(algo);
  runtime::Session sa(a, oa), sb(b, ob);
  for (uint32_t seed : {10u, 20u}) {
    runtime::TensorMap in = {{"x", random_tensor(a.type_of("x")->static_shape(), seed)}};
    const auto want = sa.run(in), got = sb.run(in);
    for (const std::string& o : a.outputs) {
      if (want.at(o).dtype() != DType::Float32) {  // MaxPool's Indices
        ASSERT_EQ(got.at(o).nbytes(), want.at(o).nbytes()) << o;
        EXPECT_EQ(std::memcmp(got.at(o).raw(), want.at(o).raw(), want.at(o).nbytes()), 0) << o << " with " << algo;
        continue;
      }
      EXPECT_LE(joule::testing::rel_error(got.at(o), want.at(o)), 1e-5) << o << " with " << algo;
    }
  }
}

// `g` after the channels_last pass (verified) with every conv wanted N,H,W,C.
ir::Graph every_conv_channels_last(const ir::Graph& g) {
  ir::Graph h = g;
  passes::PassOptions o;
  o.verify = true;
  o.channels_last_conv = [](const ir::Graph&, const ir::Node&) { return true; };
  passes::run_pipeline(h, {"channels_last"}, o);
  return h;
}

TEST(ChannelsLast, ConvChainRunsNhwcWithTransposesOnlyAtItsEdges) {
  const ir::Graph g = inverted_residual();
  ir::Graph h = g;
  passes::PassOptions o;
  o.verify = true;
  const auto report = passes::run_pipeline(h, {"fuse_conv", "channels_last"}, o);
  EXPECT_EQ(report["passes"][1]["info"]["convs_channels_last"].get<int>(), 3);
  int nhwc = 0;
  for (auto& n : h.nodes) nhwc += n->op_type == "FusedConv" && n->attr_int("channels_last", 0) == 1;
  EXPECT_EQ(nhwc, 3);
  // x once (the expand conv and the residual share it); back for the output r and for the pool,
  // which became a ReduceMean of the N,H,W,C tensor.
  EXPECT_EQ(count(h, "Transpose"), 3);
  EXPECT_EQ(count(h, "ReduceMean"), 1);
  expect_same_outputs(g, h, "guess");
  expect_same_outputs(g, h, "reference");
  runtime::SessionOptions so;
  so.threads = 1;
  runtime::Session s(h, so);
  for (size_t i = 0; i < s.num_steps(); ++i) {
    if (s.step_node(i).op_type != "FusedConv") continue;
    EXPECT_EQ(s.step_node(i).meta["software"].value("algorithm", ""), "onednn") << s.step_node(i).name;
  }
}

// A squeeze-and-excitation block (MobileNetV3): the pooled gate [N,C,1,1] multiplies the
// activations. GlobalAveragePool becomes ReduceMean over H, W of N,H,W,C and the broadcasting Mul
// runs N,H,W,C, so only the input and the output transpose.
TEST(ChannelsLast, SqueezeExcitationBlockStaysNhwc) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 8, 10, 10})
      .init("w0", random_tensor({16, 8, 1, 1}, 11, -0.4f, 0.4f))
      .init("w1", random_tensor({4, 16, 1, 1}, 12, -0.4f, 0.4f))
      .init("b1", random_tensor({4}, 13))
      .init("w2", random_tensor({16, 4, 1, 1}, 14, -0.4f, 0.4f))
      .init("b2", random_tensor({16}, 15))
      .init("w3", random_tensor({8, 16, 1, 1}, 16, -0.3f, 0.3f))
      .node("Conv", {"x", "w0"}, {"a"}, {}, "expand")
      .node("HardSwish", {"a"}, {"h"})
      .node("GlobalAveragePool", {"h"}, {"s"})
      .node("Conv", {"s", "w1", "b1"}, {"s1"}, {}, "fc1")
      .node("Relu", {"s1"}, {"s1r"})
      .node("Conv", {"s1r", "w2", "b2"}, {"s2"}, {}, "fc2")
      .node("HardSigmoid", {"s2"}, {"gate"}, {{"alpha", 1.f / 6}, {"beta", 0.5f}})
      .node("Mul", {"h", "gate"}, {"scaled"})
      .node("Conv", {"scaled", "w3"}, {"y"}, {}, "project")
      .output("y");
  for (int64_t opset : {17, 18}) {  // ReduceMean's axes: an attribute, then an input
    SCOPED_TRACE(opset);
    ir::Graph g = b.build();
    g.opsets[""] = opset;
    ir::Graph h = g;
    passes::PassOptions o;
    o.verify = true;
    passes::run_pipeline(h, {"channels_last"}, o);
    EXPECT_EQ(count(h, "Transpose"), 2);
    EXPECT_EQ(count(h, "GlobalAveragePool"), 0);
    EXPECT_EQ(count(h, "ReduceMean"), 1);
    expect_same_outputs(g, h, "guess");
    expect_same_outputs(g, h, "reference");
  }
}

// ConvNeXt: a stem (conv, the model's permute to N,H,W,C, LayerNorm, permute back), then
// blocks of a depthwise 7x7 conv, permute, LayerNorm, MLP, permute back, a per-channel layer
// scale [C,1,1] and the residual. The convs are made channels_last (their neighbours are
// permutes, not convs), the permutes cancel against the pass's Transposes and the layer scale
// is permuted with the activations: a Transpose at the graph's input and output, none inside.
TEST(ChannelsLast, ConvNextBlockLosesTheModelsPermutes) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 3, 9, 9})  // the stem: a conv, permute, LayerNorm, permute back
      .init("ws", random_tensor({16, 3, 1, 1}, 30, -0.4f, 0.4f))
      .init("gs", random_tensor({16}, 31, 0.5f, 1.5f))
      .init("bs", random_tensor({16}, 32))
      .node("Conv", {"x", "ws"}, {"c"}, {}, "stem")
      .node("Transpose", {"c"}, {"ct"}, {{"perm", Ints{0, 2, 3, 1}}})
      .node("LayerNormalization", {"ct", "gs", "bs"}, {"cn"}, {{"axis", int64_t{-1}}})
      .node("Transpose", {"cn"}, {"stem_out"}, {{"perm", Ints{0, 3, 1, 2}}});
  for (int k = 0; k < 2; ++k) {
    const std::string p = "b" + std::to_string(k) + "_", in = k ? "b0_out" : "stem_out";
    const auto seed = static_cast<uint32_t>(40 + 10 * k);
    b.init(p + "wd", random_tensor({16, 1, 7, 7}, seed, -0.2f, 0.2f))
        .init(p + "bd", random_tensor({16}, seed + 1))
        .init(p + "g", random_tensor({16}, seed + 2, 0.5f, 1.5f))
        .init(p + "beta", random_tensor({16}, seed + 3))
        .init(p + "w1", random_tensor({16, 32}, seed + 4, -0.3f, 0.3f))
        .init(p + "w2", random_tensor({32, 16}, seed + 5, -0.3f, 0.3f))
        .init(p + "scale", random_tensor({16, 1, 1}, seed + 6, 0.1f, 0.5f))
        .node("Conv", {in, p + "wd", p + "bd"}, {p + "d"}, {{"pads", Ints{3, 3, 3, 3}}, {"group", int64_t{16}}}, p + "dw")
        .node("Transpose", {p + "d"}, {p + "t"}, {{"perm", Ints{0, 2, 3, 1}}})
        .node("LayerNormalization", {p + "t", p + "g", p + "beta"}, {p + "n"}, {{"axis", int64_t{-1}}})
        .node("MatMul", {p + "n", p + "w1"}, {p + "h"})
        .node("Relu", {p + "h"}, {p + "hr"})
        .node("MatMul", {p + "hr", p + "w2"}, {p + "m"})
        .node("Transpose", {p + "m"}, {p + "mt"}, {{"perm", Ints{0, 3, 1, 2}}})
        .node("Mul", {p + "mt", p + "scale"}, {p + "s"})
        .node("Add", {p + "s", in}, {p + "out"});
  }
  b.output("b1_out");
  const ir::Graph g = b.build();
  ASSERT_EQ(count(g, "Transpose"), 6);
  ir::Graph h = g;
  passes::PassOptions o;
  o.verify = true;
  o.channels_last_conv = [](const ir::Graph&, const ir::Node&) { return true; };
  passes::run_pipeline(h, {"channels_last"}, o);
  int nhwc = 0;
  for (auto& n : h.nodes) nhwc += n->op_type == "FusedConv" && n->attr_int("channels_last", 0) == 1;
  EXPECT_EQ(nhwc, 3);
  EXPECT_EQ(count(h, "Transpose"), 2);  // x in, b1_out back
  expect_same_outputs(g, h, "guess");
  expect_same_outputs(g, h, "reference");
}

// A head that averages H and W with ReduceMean (MNASNet's x.mean([2, 3])): over axes 1, 2 of
// the N,H,W,C tensor. Without keepdims its [N,C] output needs no Transpose; with keepdims the
// [N,1,1,C] result goes back to N,C,H,W. Axes as an attribute (opset 13) and an input (18).
TEST(ChannelsLast, SpatialReduceMeanRunsNhwc) {
  for (int64_t opset : {13, 18})
    for (int64_t keep : {0, 1}) {
      SCOPED_TRACE("opset " + std::to_string(opset) + " keepdims " + std::to_string(keep));
      GraphBuilder b;
      b.input("x", DType::Float32, {1, 8, 6, 6})
          .init("w0", random_tensor({16, 8, 1, 1}, 61, -0.4f, 0.4f))
          .init("w1", random_tensor({16, 16, 1, 1}, 62, -0.4f, 0.4f))
          .node("Conv", {"x", "w0"}, {"a"})
          .node("Relu", {"a"}, {"r"})
          .node("Conv", {"r", "w1"}, {"c"});
      if (opset >= 18)
        b.init("axes", Tensor::from_vector<int64_t>({-1, 2}, {2})).node("ReduceMean", {"c", "axes"}, {"m"}, {{"keepdims", keep}});
      else
        b.node("ReduceMean", {"c"}, {"m"}, {{"axes", Ints{2, -1}}, {"keepdims", keep}});
      b.output("m");
      ir::Graph g = b.build();
      g.opsets[""] = opset;
      const ir::Graph h = every_conv_channels_last(g);
      EXPECT_EQ(count(h, "Transpose"), keep ? 2 : 1);
      expect_same_outputs(g, h, "guess");
      expect_same_outputs(g, h, "reference");
    }
}

// Pools between convs (GoogLeNet's and SqueezeNet's MaxPool, DenseNet's and Inception's
// AveragePool, ceil_mode and pads included) become joule's N,H,W,C pools: no Transpose between
// the convs; a pool with an Indices output stays N,C,H,W.
TEST(ChannelsLast, PoolsBetweenConvsRunNhwc) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 8, 13, 13})
      .init("w1", random_tensor({16, 8, 1, 1}, 1, -0.4f, 0.4f))
      .init("w2", random_tensor({16, 16, 1, 1}, 2, -0.4f, 0.4f))
      .init("w3", random_tensor({8, 16, 1, 1}, 3, -0.4f, 0.4f))
      .node("Conv", {"x", "w1"}, {"a"}, {}, "c1")
      .node("Relu", {"a"}, {"ar"})
      .node("MaxPool", {"ar"}, {"m"},
            {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}})
      .node("Conv", {"m", "w2"}, {"c"}, {}, "c2")
      .node("AveragePool", {"c"}, {"p"},
            {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}, {"count_include_pad", int64_t{0}}})
      .node("Conv", {"p", "w3"}, {"y"}, {}, "c3")
      .node("MaxPool", {"y"}, {"yp", "idx"}, {{"kernel_shape", Ints{2, 2}}})
      .output("yp")
      .output("idx");
  const ir::Graph g = b.build();
  const ir::Graph h = every_conv_channels_last(g);
  EXPECT_EQ(count(h, "Transpose"), 2);  // x in, y out (to the pool with Indices)
  int nhwc_pools = 0, onnx_pools = 0;
  for (auto& n : h.nodes) {
    if (n->op_type != "MaxPool" && n->op_type != "AveragePool") continue;
    (n->domain == "joule" && n->attr_int("channels_last", 0) == 1 ? nhwc_pools : onnx_pools) += 1;
  }
  EXPECT_EQ(nhwc_pools, 2);
  EXPECT_EQ(onnx_pools, 1);
  expect_same_outputs(g, h, "conv=onednn");
  expect_same_outputs(g, h, "reference");
}

// A Fire module (SqueezeNet): squeeze 1x1, expand 1x1 and 3x3 side by side, their ReLUs
// concatenated along the channels, and the next squeeze. The Concat runs on N,H,W,C (axis 3):
// no Transpose between the convs.
TEST(ChannelsLast, ChannelConcatOfNhwcBranchesStaysNhwc) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 16, 10, 10})
      .init("ws", random_tensor({8, 16, 1, 1}, 1, -0.4f, 0.4f))
      .init("w1", random_tensor({12, 8, 1, 1}, 2, -0.4f, 0.4f))
      .init("w3", random_tensor({12, 8, 3, 3}, 3, -0.2f, 0.2f))
      .init("wn", random_tensor({8, 24, 1, 1}, 4, -0.3f, 0.3f))
      .node("Conv", {"x", "ws"}, {"s"}, {}, "squeeze")
      .node("Relu", {"s"}, {"sr"})
      .node("Conv", {"sr", "w1"}, {"e1"}, {}, "expand1")
      .node("Relu", {"e1"}, {"e1r"})
      .node("Conv", {"sr", "w3"}, {"e3"}, {{"pads", Ints{1, 1, 1, 1}}}, "expand3")
      .node("Relu", {"e3"}, {"e3r"})
      .node("Concat", {"e1r", "e3r"}, {"cat"}, {{"axis", int64_t{1}}})
      .node("Conv", {"cat", "wn"}, {"y"}, {}, "next")
      .output("y");
  const ir::Graph g = b.build();
  const ir::Graph h = every_conv_channels_last(g);
  EXPECT_EQ(count(h, "Transpose"), 2);  // x in, y out
  for (auto& n : h.nodes) {
    if (n->op_type == "Concat") {
      EXPECT_EQ(n->attr_int("axis", 0), 3);
    }
  }
  expect_same_outputs(g, h, "conv=onednn");
  expect_same_outputs(g, h, "reference");
}

// A dense layer (DenseNet): two branches concatenated, then BatchNormalization, ReLU and the
// next conv. The BN becomes joule's N,H,W,C one: no Transpose between the convs.
TEST(ChannelsLast, BatchNormAfterConcatRunsNhwc) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 8, 9, 9})
      .init("wa", random_tensor({8, 8, 1, 1}, 1, -0.4f, 0.4f))
      .init("wb", random_tensor({4, 8, 3, 3}, 2, -0.2f, 0.2f))
      .init("scale", random_tensor({12}, 3, 0.5f, 1.5f))
      .init("bias", random_tensor({12}, 4, -0.5f, 0.5f))
      .init("mean", random_tensor({12}, 5, -0.3f, 0.3f))
      .init("var", random_tensor({12}, 6, 0.2f, 2.f))
      .init("wn", random_tensor({8, 12, 1, 1}, 7, -0.3f, 0.3f))
      .node("Conv", {"x", "wa"}, {"a"}, {}, "a")
      .node("Conv", {"x", "wb"}, {"c"}, {{"pads", Ints{1, 1, 1, 1}}}, "b")
      .node("Concat", {"a", "c"}, {"cat"}, {{"axis", int64_t{1}}})
      .node("BatchNormalization", {"cat", "scale", "bias", "mean", "var"}, {"bn"}, {{"epsilon", 1e-3f}}, "bn")
      .node("Relu", {"bn"}, {"r"})
      .node("Conv", {"r", "wn"}, {"y"}, {}, "next")
      .output("y");
  const ir::Graph g = b.build();
  const ir::Graph h = every_conv_channels_last(g);
  EXPECT_EQ(count(h, "Transpose"), 2);  // x in, y out
  for (auto& n : h.nodes)
    if (n->op_type == "BatchNormalization") {
      EXPECT_EQ(n->domain, "joule");
      EXPECT_EQ(n->attr_int("channels_last", 0), 1);
    }
  expect_same_outputs(g, h, "conv=onednn");
  expect_same_outputs(g, h, "reference");
  expect_same_outputs(g, h, "batch_norm=simd");
}

// fuse_bn_relu after channels_last: DenseNet's BN + ReLU become one joule BatchNormalization
// with activation Relu (the reference kernel and the simd one agree with the unfused graph, NaN
// kept); a BN whose output something else reads too keeps its Relu apart.
ir::Graph dense_layer(bool bn_read_twice) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 8, 9, 9})
      .init("wa", random_tensor({8, 8, 1, 1}, 1, -0.4f, 0.4f))
      .init("scale", random_tensor({8}, 3, 0.5f, 1.5f))
      .init("bias", random_tensor({8}, 4, -0.5f, 0.5f))
      .init("mean", random_tensor({8}, 5, -0.3f, 0.3f))
      .init("var", random_tensor({8}, 6, 0.2f, 2.f))
      .init("wn", random_tensor({8, 8, 1, 1}, 7, -0.3f, 0.3f))
      .node("Conv", {"x", "wa"}, {"a"}, {}, "a")
      .node("BatchNormalization", {"a", "scale", "bias", "mean", "var"}, {"bn"}, {{"epsilon", 1e-3f}}, "bn")
      .node("Relu", {"bn"}, {"r"}, {}, "relu")
      .node("Conv", {"r", "wn"}, {"y"}, {}, "next")
      .output("y");
  if (bn_read_twice) b.node("Conv", {"bn", "wn"}, {"y2"}, {}, "other").output("y2");
  return b.build();
}

TEST(FuseBnRelu, NhwcBatchNormTakesTheRelu) {
  const ir::Graph g = dense_layer(false);
  ir::Graph h = every_conv_channels_last(g);
  passes::PassOptions o;
  o.verify = true;
  const auto report = passes::run_pipeline(h, {"fuse_bn_relu"}, o);
  EXPECT_EQ(report["passes"][0]["info"]["fused"].get<int>(), 1);
  EXPECT_EQ(count(h, "Relu"), 0);
  for (auto& n : h.nodes)
    if (n->op_type == "BatchNormalization") {
      EXPECT_EQ(n->domain, "joule");
      EXPECT_EQ(n->attr_string("activation", ""), "Relu");
    }
  EXPECT_EQ(count(h, "BatchNormalization"), 1);
  expect_same_outputs(g, h, "reference");
  expect_same_outputs(g, h, "batch_norm=simd");
  // NaN through the fused node on both kernels, where the unfused graph has it.
  runtime::TensorMap in = {{"x", random_tensor({1, 8, 9, 9}, 30)}};
  in["x"].data<float>()[40] = std::numeric_limits<float>::quiet_NaN();
  runtime::SessionOptions plain;
  plain.threads = 1;
  const Tensor want = runtime::Session(g, plain).run(in).at("y");
  for (const char* algo : {"reference", "batch_norm=simd"}) {
    runtime::SessionOptions so = plain;
    so.algo.add(algo);
    const Tensor got = runtime::Session(h, so).run(in).at("y");
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_EQ(std::isnan(got.data<float>()[i]), std::isnan(want.data<float>()[i])) << algo << " element " << i;
  }

  ir::Graph k = every_conv_channels_last(dense_layer(true));
  const auto kept = passes::run_pipeline(k, {"fuse_bn_relu"}, o);
  EXPECT_EQ(kept["passes"][0]["info"]["fused"].get<int>(), 0);
  EXPECT_EQ(count(k, "Relu"), 1);
}

// A ShuffleNet unit: the channels split by two Slices, one half through a conv, the halves
// concatenated and shuffled (Reshape [N,2,C/2,H,W], Transpose (0,2,1,3,4), Reshape back), then
// the next conv. All of it runs N,H,W,C: Transposes only at the edges and the shuffle's own.
TEST(ChannelsLast, SlicesAndChannelShuffleRunNhwc) {
  for (int64_t opset : {9, 13}) {  // Slice's starts/ends/axes: attributes, then inputs
    SCOPED_TRACE(opset);
    GraphBuilder b;
    b.g.opsets[""] = opset;
    b.input("x", DType::Float32, {1, 8, 6, 7})
        .init("w0", random_tensor({8, 8, 1, 1}, 1, -0.4f, 0.4f))
        .init("wb", random_tensor({4, 4, 3, 3}, 2, -0.3f, 0.3f))
        .init("wn", random_tensor({8, 8, 1, 1}, 3, -0.4f, 0.4f))
        .init("shape5", Tensor::from_vector(std::vector<int64_t>{1, 2, 4, 6, 7}, {5}))
        .init("shape4", Tensor::from_vector(std::vector<int64_t>{1, 8, 6, 7}, {4}))
        .node("Conv", {"x", "w0"}, {"c0"}, {}, "c0")
        .node("Relu", {"c0"}, {"r0"});
    if (opset < 10) {
      b.node("Slice", {"r0"}, {"lo"}, {{"starts", Ints{0}}, {"ends", Ints{4}}, {"axes", Ints{1}}})
          .node("Slice", {"r0"}, {"hi"}, {{"starts", Ints{0, 4}}, {"ends", Ints{1, 8}}});  // default axes 0, 1
    } else {
      b.init("s0", Tensor::from_vector(std::vector<int64_t>{0}, {1}))
          .init("s4", Tensor::from_vector(std::vector<int64_t>{4}, {1}))
          .init("s8", Tensor::from_vector(std::vector<int64_t>{8}, {1}))
          .init("ax", Tensor::from_vector(std::vector<int64_t>{-3}, {1}))
          .node("Slice", {"r0", "s0", "s4", "ax"}, {"lo"})
          .node("Slice", {"r0", "s4", "s8", "ax"}, {"hi"});
    }
    b.node("Conv", {"hi", "wb"}, {"br"}, {{"pads", Ints{1, 1, 1, 1}}}, "branch")
        .node("Concat", {"lo", "br"}, {"cat"}, {{"axis", int64_t{1}}})
        .node("Reshape", {"cat", "shape5"}, {"r5"})
        .node("Transpose", {"r5"}, {"t5"}, {{"perm", Ints{0, 2, 1, 3, 4}}})
        .node("Reshape", {"t5", "shape4"}, {"shuf"})
        .node("Conv", {"shuf", "wn"}, {"y"}, {}, "next")
        .output("y");
    const ir::Graph g = b.build();
    const ir::Graph h = every_conv_channels_last(g);
    EXPECT_EQ(count(h, "Transpose"), 3);  // x in, y out, the shuffle's
    for (auto& n : h.nodes) {
      if (n->op_type == "Transpose" && n->attr_ints("perm").size() == 5) {
        EXPECT_EQ(n->attr_ints("perm"), (Ints{0, 1, 2, 4, 3}));
      }
    }
    expect_same_outputs(g, h, "conv=onednn");
    expect_same_outputs(g, h, "reference");
  }
}

TEST(ChannelsLast, LoneConvsAndRefusedConvsStayNchw) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 4, 9, 9})
      .init("w", random_tensor({6, 4, 3, 3}, 5))
      .node("Conv", {"x", "w"}, {"c"}, {{"pads", Ints{1, 1, 1, 1}}})
      .node("Relu", {"c"}, {"y"})
      .output("y");
  const ir::Graph lone = b.build();
  ir::Graph h = lone;
  passes::run_pipeline(h, {"channels_last"});
  EXPECT_EQ(count(h, "Transpose"), 0);
  ASSERT_EQ(count(h, "Conv"), 1);
  EXPECT_FALSE(h.nodes[0]->has_attr("channels_last"));
  expect_same_outputs(lone, h, "guess");

  ir::Graph refused = inverted_residual();
  passes::PassOptions o;
  o.channels_last_conv = [](const ir::Graph&, const ir::Node& n) { return n.name != "depthwise"; };
  passes::run_pipeline(refused, {"channels_last"}, o);
  // The depthwise conv splits the chain: expand and project are each alone.
  EXPECT_EQ(count(refused, "Transpose"), 0);
  EXPECT_EQ(count(refused, "Conv"), 3);
}

TEST(ChannelsLast, AlgoSpecDecidesByFirstChoiceAndEstimates) {
  ir::Graph g = inverted_residual();
  passes::infer_shapes(g);  // the estimates need the shapes
  const ir::Node* dw = nullptr;
  for (auto& n : g.nodes)
    if (n->name == "depthwise") dw = n.get();
  ASSERT_NE(dw, nullptr);
  auto wants = [&](const std::vector<std::string>& algo) {
    kernels::AlgoSpec spec;
    for (auto& a : algo) spec.add(a);
    return spec.wants_channels_last(g, *dw, 1);
  };
  EXPECT_TRUE(wants({}));  // guess: depthwise is estimated faster on N,H,W,C
  EXPECT_TRUE(wants({"auto"}));
  EXPECT_TRUE(wants({"conv=onednn"}));
  EXPECT_FALSE(wants({"reference"}));
  EXPECT_FALSE(wants({"conv=direct"}));
  EXPECT_FALSE(wants({"conv=direct,onednn"}));
  EXPECT_TRUE(wants({"conv=direct", "depthwise=onednn"}));  // node rules beat class rules
}

// A RegNet block (1x1, 3x3 with 8 channels per group, 1x1) at batch 8: under `guess` the whole
// chain goes N,H,W,C and, on a CPU with AVX2 but not AVX-512, the grouped conv runs on `grouped`
// (measured 0.5-0.6x of oneDNN's time on such layers there); the outputs are those of the
// N,C,H,W graph.
TEST(ChannelsLast, GroupedConvBlockRunsOnTheGroupedKernelWithoutAvx512) {
  GraphBuilder b;
  b.input("x", DType::Float32, {8, 16, 28, 28})
      .init("w1", random_tensor({48, 16, 1, 1}, 1, -0.4f, 0.4f))
      .init("w2", random_tensor({48, 8, 3, 3}, 2, -0.3f, 0.3f))
      .init("b2", random_tensor({48}, 3))
      .init("w3", random_tensor({16, 48, 1, 1}, 4, -0.3f, 0.3f))
      .node("Conv", {"x", "w1"}, {"e"}, {}, "expand")
      .node("Relu", {"e"}, {"er"})
      .node("Conv", {"er", "w2", "b2"}, {"g"}, {{"pads", Ints{1, 1, 1, 1}}, {"group", int64_t{6}}}, "grouped")
      .node("Relu", {"g"}, {"gr"})
      .node("Conv", {"gr", "w3"}, {"y"}, {}, "project")
      .output("y");
  const ir::Graph g = b.build();
  ir::Graph h = g;
  passes::PassOptions o;
  o.channels_last_conv = [](const ir::Graph& graph, const ir::Node& n) {
    kernels::AlgoSpec spec;
    return spec.wants_channels_last(graph, n, 1);
  };
  passes::run_pipeline(h, {"fuse_conv", "channels_last"}, o);
  runtime::SessionOptions so;
  so.threads = 1;
  runtime::Session s(h, so);
  std::string algo;
  for (size_t i = 0; i < s.num_steps(); ++i)
    if (s.step_node(i).name == "grouped") algo = s.step_node(i).meta["software"].value("algorithm", "");
  if (cpu_features().avx2_fma && !cpu_features().avx512) {
    EXPECT_EQ(algo, "grouped");
    EXPECT_EQ(count(h, "Transpose"), 2);  // the input and the output only
  }
  expect_same_outputs(g, h, "guess");
}

}  // namespace
