// Pruning: structured channel removal carried through BatchNorm, activations, depthwise convs,
// the next conv and a classifier computes exactly what the unpruned model computes with the
// removed channels' readers zeroed; residual adds keep their channels; unstructured sparsity.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "graph_builder.h"
#include "joule/api/prune.h"
#include "joule/core/error.h"
#include "joule/passes/infer_shapes.h"
#include "joule/prune/prune.h"
#include "joule/runtime/session.h"
#include "test_tensors.h"

using namespace joule;
using joule::testing::GraphBuilder;
using joule::testing::random_tensor;
using Ints = std::vector<int64_t>;

namespace {
// conv1 (3->8) + BN + Relu -> depthwise (8) + Clip -> conv2 (8->6) + Relu -> GAP -> Flatten -> Gemm (6->5)
ir::Graph chain() {
  return GraphBuilder()
      .input("x", DType::Float32, {1, 3, 8, 8})
      .init("w1", random_tensor({8, 3, 3, 3}, 1))
      .init("b1", random_tensor({8}, 2))
      .init("g", random_tensor({8}, 3, 0.5f, 1.5f))
      .init("be", random_tensor({8}, 4))
      .init("mu", random_tensor({8}, 5))
      .init("var", random_tensor({8}, 6, 0.5f, 1.f))
      .init("wd", random_tensor({8, 1, 3, 3}, 7))
      .init("bd", random_tensor({8}, 8))
      .init("w2", random_tensor({6, 8, 1, 1}, 9))
      .init("fw", random_tensor({5, 6}, 10))
      .init("fb", random_tensor({5}, 11))
      .node("Conv", {"x", "w1", "b1"}, {"c1"}, {{"pads", Ints{1, 1, 1, 1}}}, "conv1")
      .node("BatchNormalization", {"c1", "g", "be", "mu", "var"}, {"n1"}, {}, "bn1")
      .node("Relu", {"n1"}, {"r1"}, {}, "relu1")
      .node("Conv", {"r1", "wd", "bd"}, {"d"}, {{"pads", Ints{1, 1, 1, 1}}, {"group", int64_t{8}}}, "dw")
      .node("Clip", {"d"}, {"cd"}, {{"min", 0.f}, {"max", 6.f}}, "clip")
      .node("Conv", {"cd", "w2"}, {"c2"}, {}, "conv2")
      .node("Relu", {"c2"}, {"r2"}, {}, "relu2")
      .node("GlobalAveragePool", {"r2"}, {"p"}, {}, "gap")
      .node("Flatten", {"p"}, {"f"}, {}, "flatten")
      .node("Gemm", {"f", "fw", "fb"}, {"y"}, {{"transB", int64_t{1}}}, "fc")
      .output("y")
      .build();
}

// Output channels kept by l1 ranking.
std::vector<int64_t> kept_l1(const Tensor& w, int64_t keep) {
  const int64_t m = w.shape()[0], per = w.numel() / m;
  std::vector<double> s(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < per; ++j) s[static_cast<size_t>(i)] += std::abs(w.data<float>()[i * per + j]);
  std::vector<int64_t> o(static_cast<size_t>(m));
  std::iota(o.begin(), o.end(), 0);
  std::stable_sort(o.begin(), o.end(), [&](int64_t a, int64_t b) { return s[size_t(a)] > s[size_t(b)]; });
  o.resize(static_cast<size_t>(keep));
  return o;
}

// Zeroes, along `axis`, every index of `t` not in `keep`.
void zero_except(Tensor& t, int axis, const std::vector<int64_t>& keep) {
  const Shape& s = t.shape();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[size_t(i)];
  for (size_t i = size_t(axis) + 1; i < s.size(); ++i) inner *= s[i];
  const int64_t n = s[size_t(axis)];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < n; ++c)
      if (std::find(keep.begin(), keep.end(), c) == keep.end())
        std::fill_n(t.data<float>() + (o * n + c) * inner, inner, 0.f);
}

// Structured pruning of `g` in place at `ratio`, L1 criterion.
prune::PruneReport structured(ir::Graph& g, double ratio) {
  prune::PruneOptions o;
  o.structured = true;
  o.ratio = ratio;
  return prune::prune_graph(g, o);
}

Tensor run(const ir::Graph& g, const Tensor& x) {
  runtime::Session s(g);
  return s.run({{"x", x}}).at("y");
}
}  // namespace

TEST(Prune, StructuredEqualsTheModelWithTheRemovedChannelsReadersZeroed) {
  const ir::Graph g = chain();
  ir::Graph p = g;
  const prune::PruneReport rep = structured(p, 0.5);
  ASSERT_EQ(rep.layers.size(), 3u);  // conv1, conv2 (the depthwise conv follows conv1) and fc
  EXPECT_EQ(rep.layers[0].after, 4);
  EXPECT_EQ(rep.layers[1].after, 3);
  EXPECT_EQ(rep.layers[2].node, "fc");  // its features are the graph output
  EXPECT_EQ(rep.layers[2].after, 5);
  EXPECT_NE(rep.layers[2].kept_because.find("graph output"), std::string::npos) << rep.layers[2].kept_because;
  EXPECT_EQ(p.initializers.at("w1").shape(), (Shape{4, 3, 3, 3}));
  EXPECT_EQ(p.initializers.at("g").shape(), (Shape{4}));
  EXPECT_EQ(p.initializers.at("wd").shape(), (Shape{4, 1, 3, 3}));
  EXPECT_EQ(p.initializers.at("w2").shape(), (Shape{3, 4, 1, 1}));
  EXPECT_EQ(p.initializers.at("fw").shape(), (Shape{5, 3}));
  EXPECT_LT(rep.params_after, rep.params_before);
  EXPECT_LT(rep.flops_after, rep.flops_before);

  // The same function: the unpruned model with the removed channels' readers zeroed.
  ir::Graph z = g;
  const auto k1 = kept_l1(g.initializers.at("w1"), 4), k2 = kept_l1(g.initializers.at("w2"), 3);
  zero_except(z.initializers.at("w2"), 1, k1);  // conv2 ignores conv1's removed channels
  zero_except(z.initializers.at("fw"), 1, k2);  // the classifier ignores conv2's
  const Tensor x = random_tensor({1, 3, 8, 8}, 42);
  const Tensor a = run(z, x), b = run(p, x);
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-5) << i;
}

// The hidden features of an MLP (Gemm, both weight layouts, with BatchNorm1d) and of a
// transformer block's MLP (MatMul + bias Add + Gelu as Erf + MatMul over [batch, tokens,
// features]) are removed: the pruned model computes what the unpruned one computes with the
// removed features' producers zeroed (their weight columns/rows and biases).
TEST(Prune, GemmAndMatMulFeaturesAreRemovedAsTheirRowsZeroed) {
  // MLP: x[2,6] -> fc1 (transB, 6->8) -> BN -> Relu -> fc2 (no transB, 8->7) -> Relu -> fc3 (7->3)
  const ir::Graph mlp = GraphBuilder()
                            .input("x", DType::Float32, {2, 6})
                            .init("w1", random_tensor({8, 6}, 1))
                            .init("b1", random_tensor({8}, 2))
                            .init("g", random_tensor({8}, 3, 0.5f, 1.5f))
                            .init("be", random_tensor({8}, 4))
                            .init("mu", random_tensor({8}, 5))
                            .init("var", random_tensor({8}, 6, 0.5f, 1.f))
                            .init("w2", random_tensor({8, 7}, 7))
                            .init("b2", random_tensor({1, 7}, 8))
                            .init("w3", random_tensor({3, 7}, 9))
                            .node("Gemm", {"x", "w1", "b1"}, {"h1"}, {{"transB", int64_t{1}}}, "fc1")
                            .node("BatchNormalization", {"h1", "g", "be", "mu", "var"}, {"n1"}, {}, "bn")
                            .node("Relu", {"n1"}, {"r1"}, {}, "relu1")
                            .node("Gemm", {"r1", "w2", "b2"}, {"h2"}, {}, "fc2")
                            .node("Relu", {"h2"}, {"r2"}, {}, "relu2")
                            .node("Gemm", {"r2", "w3"}, {"y"}, {{"transB", int64_t{1}}}, "fc3")
                            .output("y")
                            .build();
  ir::Graph p = mlp;
  const prune::PruneReport rep = structured(p, 0.5);
  ASSERT_EQ(rep.layers.size(), 3u);
  EXPECT_EQ(rep.layers[0].after, 4);
  EXPECT_EQ(rep.layers[1].after, 4);  // round(7 * 0.5)
  EXPECT_EQ(rep.layers[2].after, 3);  // the output
  EXPECT_EQ(p.initializers.at("w1").shape(), (Shape{4, 6}));
  EXPECT_EQ(p.initializers.at("g").shape(), (Shape{4}));
  EXPECT_EQ(p.initializers.at("w2").shape(), (Shape{4, 4}));
  EXPECT_EQ(p.initializers.at("b2").shape(), (Shape{1, 4}));
  EXPECT_EQ(p.initializers.at("w3").shape(), (Shape{3, 4}));
  // Kept by l1 norm: fc1's rows of [8, 6]; fc2's columns of [8, 7].
  const auto k1 = kept_l1(mlp.initializers.at("w1"), 4);
  Tensor w2t(DType::Float32, {7, 8});
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 7; ++j) w2t.data<float>()[j * 8 + i] = mlp.initializers.at("w2").data<float>()[i * 7 + j];
  const auto k2 = kept_l1(w2t, 4);
  ir::Graph z = mlp;
  zero_except(z.initializers.at("w2"), 0, k1);  // fc2 ignores fc1's removed features
  zero_except(z.initializers.at("w3"), 1, k2);  // fc3 ignores fc2's
  const Tensor x = random_tensor({2, 6}, 10);
  {
    const Tensor a = run(z, x), b = run(p, x);
    ASSERT_EQ(a.shape(), b.shape());
    for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-5) << i;
  }

  // Transformer MLP: x[1,5,4] -> MatMul(4->8) + b -> Gelu (x * 0.5 * (1 + erf(x / sqrt 2))) ->
  // MatMul(8->4) + b2 -> Add(x): the residual ties the output features to the input (kept).
  const ir::Graph tf = GraphBuilder()
                           .input("x", DType::Float32, {1, 5, 4})
                           .init("wu", random_tensor({4, 8}, 11))
                           .init("bu", random_tensor({8}, 12))
                           .init("s2", Tensor::scalar(1.41421356f))
                           .init("one", Tensor::scalar(1.f))
                           .init("half", Tensor::scalar(0.5f))
                           .init("wd", random_tensor({8, 4}, 13))
                           .init("bd", random_tensor({4}, 14))
                           .node("MatMul", {"x", "wu"}, {"u"}, {}, "up")
                           .node("Add", {"u", "bu"}, {"ub"}, {}, "up_bias")
                           .node("Div", {"ub", "s2"}, {"q"}, {}, "div")
                           .node("Erf", {"q"}, {"e"}, {}, "erf")
                           .node("Add", {"e", "one"}, {"e1"}, {}, "add1")
                           .node("Mul", {"ub", "e1"}, {"m"}, {}, "mul")
                           .node("Mul", {"m", "half"}, {"gl"}, {}, "mul_half")
                           .node("MatMul", {"gl", "wd"}, {"d"}, {}, "down")
                           .node("Add", {"d", "bd"}, {"db"}, {}, "down_bias")
                           .node("Add", {"db", "x"}, {"y"}, {}, "residual")
                           .output("y")
                           .build();
  ir::Graph pt = tf;
  const prune::PruneReport rt = structured(pt, 0.25);
  ASSERT_EQ(rt.layers.size(), 2u);
  EXPECT_EQ(rt.layers[0].node, "up");
  EXPECT_EQ(rt.layers[0].after, 6);
  EXPECT_EQ(rt.layers[1].after, 4);
  EXPECT_NE(rt.layers[1].kept_because.find("graph"), std::string::npos) << rt.layers[1].kept_because;
  EXPECT_EQ(pt.initializers.at("wu").shape(), (Shape{4, 6}));
  EXPECT_EQ(pt.initializers.at("bu").shape(), (Shape{6}));
  EXPECT_EQ(pt.initializers.at("wd").shape(), (Shape{6, 4}));
  Tensor wut(DType::Float32, {8, 4});
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 8; ++j) wut.data<float>()[j * 4 + i] = tf.initializers.at("wu").data<float>()[i * 8 + j];
  const auto ku = kept_l1(wut, 6);
  ir::Graph zt = tf;
  zero_except(zt.initializers.at("wd"), 0, ku);
  const Tensor xt = random_tensor({1, 5, 4}, 15);
  const Tensor a = run(zt, xt), b = run(pt, xt);
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-5) << i;
  // The group appears for the search.
  ir::Graph typed = tf;
  passes::infer_shapes(typed);
  const auto groups = prune::channel_groups(typed);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].producers, (std::vector<std::string>{"up"}));
  EXPECT_EQ(groups[0].channels, 8);
}

TEST(Prune, ChannelsTiedToTheGraphInputStayAndSayWhy) {
  // cb's output is added to the graph input x: those channels cannot change.
  ir::Graph g = GraphBuilder()
                    .input("x", DType::Float32, {1, 4, 6, 6})
                    .init("wa", random_tensor({4, 4, 3, 3}, 1))
                    .init("wb", random_tensor({4, 4, 3, 3}, 2))
                    .node("Conv", {"x", "wa"}, {"a"}, {{"pads", Ints{1, 1, 1, 1}}}, "ca")
                    .node("Relu", {"a"}, {"ra"}, {}, "r")
                    .node("Conv", {"ra", "wb"}, {"b"}, {{"pads", Ints{1, 1, 1, 1}}}, "cb")
                    .node("Add", {"b", "x"}, {"y"}, {}, "add")
                    .output("y")
                    .build();
  const prune::PruneReport rep = structured(g, 0.75);
  ASSERT_EQ(rep.layers.size(), 2u);
  EXPECT_EQ(rep.layers[0].after, 1);  // ca: read by Relu and cb only
  EXPECT_EQ(rep.layers[1].after, 4);  // cb: tied to x by the Add
  EXPECT_NE(rep.layers[1].kept_because.find("graph"), std::string::npos) << rep.layers[1].kept_because;
  runtime::Session s(g);  // still runs
  EXPECT_EQ(s.run({{"x", random_tensor({1, 4, 6, 6}, 3)}}).at("y").shape(), (Shape{1, 4, 6, 6}));
}

TEST(Prune, ResidualGroupsLoseTheSameChannelsInEveryConvThatFeedsThem) {
  // c0 -> r0 -> c1 -> r1 -> c2 -> Add(c2, r0) -> Relu -> GAP -> Flatten -> Gemm: c0 and c2 form one
  // group (tied by the Add); c1 is alone.
  const ir::Graph g = GraphBuilder()
                          .input("x", DType::Float32, {1, 3, 6, 6})
                          .init("w0", random_tensor({8, 3, 3, 3}, 1))
                          .init("w1", random_tensor({6, 8, 3, 3}, 2))
                          .init("w2", random_tensor({8, 6, 1, 1}, 3))
                          .init("b2", random_tensor({8}, 4))
                          .init("fw", random_tensor({5, 8}, 5))
                          .node("Conv", {"x", "w0"}, {"a0"}, {{"pads", Ints{1, 1, 1, 1}}}, "c0")
                          .node("Relu", {"a0"}, {"r0"}, {}, "relu0")
                          .node("Conv", {"r0", "w1"}, {"a1"}, {{"pads", Ints{1, 1, 1, 1}}}, "c1")
                          .node("Relu", {"a1"}, {"r1"}, {}, "relu1")
                          .node("Conv", {"r1", "w2", "b2"}, {"a2"}, {}, "c2")
                          .node("Add", {"a2", "r0"}, {"s"}, {}, "add")
                          .node("Relu", {"s"}, {"rs"}, {}, "relu2")
                          .node("GlobalAveragePool", {"rs"}, {"p"}, {}, "gap")
                          .node("Flatten", {"p"}, {"f"}, {}, "flatten")
                          .node("Gemm", {"f", "fw"}, {"y"}, {{"transB", int64_t{1}}}, "fc")
                          .output("y")
                          .build();
  ir::Graph p = g;
  const prune::PruneReport rep = structured(p, 0.5);
  ASSERT_EQ(rep.layers.size(), 4u);  // and fc, kept whole
  EXPECT_EQ(rep.layers[0].group, 2);
  EXPECT_EQ(rep.layers[0].after, 4);  // c0
  EXPECT_EQ(rep.layers[1].after, 3);  // c1
  EXPECT_EQ(rep.layers[2].after, 4);  // c2, the same channels as c0
  EXPECT_EQ(p.initializers.at("fw").shape(), (Shape{5, 4}));
  // The group's channels ranked by c0's and c2's filter norms together.
  std::vector<double> s(8, 0);
  for (const char* w : {"w0", "w2"}) {
    const Tensor& t = g.initializers.at(w);
    const int64_t per = t.numel() / 8;
    for (int64_t i = 0; i < 8; ++i)
      for (int64_t j = 0; j < per; ++j) s[size_t(i)] += std::abs(t.data<float>()[i * per + j]);
  }
  std::vector<int64_t> k0(8);
  std::iota(k0.begin(), k0.end(), 0);
  std::stable_sort(k0.begin(), k0.end(), [&](int64_t a, int64_t b) { return s[size_t(a)] > s[size_t(b)]; });
  k0.resize(4);
  const auto k1 = kept_l1(g.initializers.at("w1"), 3);
  ir::Graph z = g;
  zero_except(z.initializers.at("w1"), 1, k0);  // c1 ignores the group's removed channels
  zero_except(z.initializers.at("w2"), 1, k1);  // c2 ignores c1's
  zero_except(z.initializers.at("fw"), 1, k0);  // the classifier ignores the group's
  const Tensor x = random_tensor({1, 3, 6, 6}, 9);
  const Tensor a = run(z, x), b = run(p, x);
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-5) << i;
}

TEST(Prune, UnstructuredLocalAndGlobalSparsity) {
  for (const char* scope : {"local", "global"}) {
    ir::Graph g = chain();
    prune::PruneOptions o;
    o.ratio = 0.6;
    o.scope = scope;
    const prune::PruneReport rep = prune::prune_graph(g, o);
    int64_t before = 0, after = 0;
    for (const auto& l : rep.layers) {
      before += l.before;
      after += l.after;
      if (std::string(scope) == "local") {
        EXPECT_NEAR(double(l.after) / double(l.before), 0.4, 0.1) << l.node;
      }
    }
    EXPECT_NEAR(double(after) / double(before), 0.4, 0.02) << scope;
    EXPECT_EQ(rep.params_after, rep.params_before);  // same shapes
    EXPECT_EQ(g.initializers.at("w1").shape(), (Shape{8, 3, 3, 3}));
  }
  ir::Graph g = chain();
  prune::PruneOptions bad;
  bad.ratio = 1.0;
  EXPECT_THROW(prune::prune_graph(g, bad), Error);
  bad.ratio = 0.5;
  bad.criterion = "bn";  // ranks channels: structured only
  EXPECT_THROW(prune::prune_graph(g, bad), Error);
}

TEST(Prune, SensitivityPrunesOneLayerAtATime) {
  api::PruneSensitivityOptions o;
  o.ratios = {0.0, 0.5};
  o.samples = 4;
  const api::PruneSensitivityResult r = api::prune_sensitivity(api::Model(chain(), "", "chain"), o);
  const auto& layers = r.json["layers"];
  ASSERT_EQ(layers.size(), 2u);
  for (const auto& l : layers) {
    EXPECT_EQ(l["ratios"]["0"]["sqnr_db"], "inf") << l["node"];  // nothing removed: the same output
    EXPECT_EQ(l["ratios"]["0"]["params_removed"].get<int64_t>(), 0);
    EXPECT_TRUE(l["ratios"]["0.5"]["sqnr_db"].is_number()) << l["node"];
    EXPECT_GT(l["ratios"]["0.5"]["params_removed"].get<int64_t>(), 0);
  }
  // conv1 at 0.5 removes its filters, BatchNorm entries, depthwise filters and conv2's inputs.
  EXPECT_EQ(layers[0]["node"], "conv1");
  EXPECT_EQ(layers[0]["ratios"]["0.5"]["params_removed"].get<int64_t>(), 4 * 27 + 4 + 4 * 4 + 4 * 9 + 4 + 6 * 4);
  EXPECT_NE(r.svg.find("conv2"), std::string::npos);
  EXPECT_NE(r.table.find("SQNR@0.5"), std::string::npos);
}

// A graph copy shares its initializers' storage: pruning the copy (unstructured pruning zeroes
// weights in place) must leave the original whole, or a sensitivity scan prunes cumulatively.
TEST(Prune, PruningACopyLeavesTheOriginalsWeights) {
  const ir::Graph fresh = chain();
  ir::Graph g = chain();
  ir::Graph p = g;
  prune::PruneOptions o;
  o.structured = false;
  o.ratio = 0.6;
  prune::prune_graph(p, o);
  for (auto& [name, t] : fresh.initializers) {
    const Tensor& now = g.initializers.at(name);
    ASSERT_EQ(now.numel(), t.numel()) << name;
    for (int64_t i = 0; i < t.numel(); ++i) ASSERT_EQ(now.data<float>()[i], t.data<float>()[i]) << name << " " << i;
  }
  api::PruneSensitivityOptions so;
  so.structured = false;
  so.ratios = {0.5, 0.9};
  so.samples = 4;
  const api::Model m(chain(), "", "chain");
  const nlohmann::json a = api::prune_sensitivity(m, so).json, b = api::prune_sensitivity(m, so).json;
  EXPECT_EQ(a["layers"], b["layers"]);  // the same scan twice: nothing carried over
  for (const auto& l : a["layers"])
    EXPECT_TRUE(l["ratios"]["0.5"]["sqnr_db"].is_number() && l["ratios"]["0.5"]["sqnr_db"].get<double>() >
                                                                   l["ratios"]["0.9"]["sqnr_db"].get<double>())
        << l["node"];
}

TEST(Prune, ConfigRulesSetPerLayerRatiosAndSkips) {
  const ir::Graph g = chain();
  const prune::PruneConfig c = prune::PruneConfig::parse(R"(
default: {ratio: 0.5, structured: true}
rules:
  - match: {name: conv1}
    ratio: 0.25
  - match: {regex: "^conv2$"}
    skip: true
)", "test.yaml");
  ir::Graph p = g;
  const prune::PruneReport rep = prune::prune_graph(p, c.resolve(g));
  ASSERT_EQ(rep.layers.size(), 3u);
  EXPECT_EQ(rep.layers[0].after, 6);  // conv1: 8 * (1 - 0.25)
  EXPECT_EQ(rep.layers[1].after, 6);  // conv2 skipped: all 6
  auto error = [&](const std::string& yaml) {
    try {
      prune::PruneConfig::parse(yaml, "bad.yaml").resolve(g);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("rules:\n  - match: {name: nope}\n    ratio: 0.5\n").find("matches no node"), std::string::npos);
  EXPECT_NE(error("rules:\n  - match: {type: Conv}\n    ratio: 1.5\n").find("must be in [0, 1)"), std::string::npos);
  EXPECT_NE(error("rules:\n  - match: {type: Conv}\n").find("give a ratio, activations or skip"), std::string::npos);
  EXPECT_NE(error("defaults: {ratio: 0.5}\n").find("unknown key 'defaults'"), std::string::npos);
}

TEST(Prune, UnstructuredFineTuningKeepsThePrunedWeightsZero) {
  const api::Model m = api::Model::load("default");
  prune::PruneOptions o;
  o.ratio = 0.5;
  api::TrainOptions ft;
  ft.data = api::DataSource::from_spec(std::string(JOULE_SOURCE_DIR) + "/models/fashion_cnn_sample.npy");
  ft.batch = 8;
  ft.steps = 4;
  ft.threads = 1;
  ft.optimizer.name = "adamw";
  ft.optimizer.lr = 0.01;
  const api::PruneResult r = api::prune(m, o, &ft);
  const int64_t zeros_pruned = r.report.nonzero_before - r.report.nonzero_after;
  ASSERT_GT(zeros_pruned, 0);
  EXPECT_GE(r.finetune["masked_values"].get<int64_t>(), zeros_pruned);
  // Every weight pruned to zero is still zero after training, and the others trained.
  const api::PruneResult plain = api::prune(m, o);
  size_t changed = 0;
  for (const auto& n : plain.model.graph().nodes) {
    if (n->op_type != "Conv" && n->op_type != "Gemm") continue;
    const Tensor& before = plain.model.graph().initializers.at(n->inputs[1]);
    const Tensor& after = r.model.graph().initializers.at(n->inputs[1]);
    for (int64_t i = 0; i < before.numel(); ++i) {
      if (before.data<float>()[i] == 0.0f) {
        EXPECT_EQ(after.data<float>()[i], 0.0f) << n->name << " " << i;
      }
      changed += before.data<float>()[i] != after.data<float>()[i];
    }
  }
  EXPECT_GT(changed, 1000u);
  // Without the mask the same training brings them back.
  api::TrainOptions loose = ft;
  const api::TrainReport t = api::train(plain.model, loose);
  size_t regrown = 0;
  for (const auto& n : plain.model.graph().nodes) {
    if (n->op_type != "Conv") continue;
    const Tensor& before = plain.model.graph().initializers.at(n->inputs[1]);
    const Tensor& after = t.model.graph().initializers.at(n->inputs[1]);
    for (int64_t i = 0; i < before.numel(); ++i) regrown += before.data<float>()[i] == 0.0f && after.data<float>()[i] != 0.0f;
  }
  EXPECT_GT(regrown, 1000u);
}

// Activation pruning: joule PruneActivation zeroes the given share of each sample's values of
// smallest magnitude (ties in index order, NaN kept), and prune_graph puts one in front of every
// Conv, Gemm and MatMul asked for (by `activations`, or a config rule).
TEST(Prune, ActivationPruningZeroesEachSamplesSmallestValues) {
  const float nan = std::nanf("");
  ir::Graph g = GraphBuilder()
                    .input("x", DType::Float32, {2, 10})
                    .node("PruneActivation", {"x"}, {"y"}, {{"ratio", 0.3f}}, "pa")
                    .output("y")
                    .build();
  g.nodes[0]->domain = "joule";
  g.opsets["joule"] = 1;
  Tensor x(DType::Float32, {2, 10});
  const float in[20] = {5, -1, 1, 0.5f, nan, 3, -0.5f, 2, 1, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  std::copy(in, in + 20, x.data<float>());
  const Tensor y = run(g, x);
  const float want[20] = {5, 0, 1, 0, nan, 3, 0, 2, 1, 4, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1};
  for (int i = 0; i < 20; ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(y.data<float>()[i])) << i;
    else
      EXPECT_EQ(y.data<float>()[i], want[i]) << i;
  }

  ir::Graph c = chain();
  prune::PruneOptions o;
  o.ratio = 0;
  o.activations = 0.5;
  o.node_activations["fc"] = 0;  // left dense
  const prune::PruneReport rep = prune::prune_graph(c, o);
  ASSERT_EQ(rep.activation_pruning.size(), 3u);  // conv1, dw, conv2
  int inserted = 0;
  for (const auto& n : c.nodes) inserted += n->op_type == "PruneActivation";
  EXPECT_EQ(inserted, 3);
  EXPECT_EQ(rep.to_json()["activation_pruning"].size(), 3u);
  EXPECT_NE(rep.table().find("zeroed at run time"), std::string::npos);
  const Tensor xi = random_tensor({1, 3, 8, 8}, 21);
  const Tensor a = run(chain(), xi), b = run(c, xi);
  double diff = 0;
  for (int64_t i = 0; i < a.numel(); ++i) diff += std::abs(a.data<float>()[i] - b.data<float>()[i]);
  EXPECT_GT(diff, 0);  // the model changed; it still runs
  // A config rule: activations only on conv2.
  const prune::PruneOptions r =
      prune::PruneConfig::parse("default: {ratio: 0}\nrules:\n  - match: {name: conv2}\n    activations: 0.25\n", "p.yaml")
          .resolve(chain());
  EXPECT_EQ(r.activations_of("conv2"), 0.25);
  EXPECT_EQ(r.activations_of("conv1"), 0.0);
  EXPECT_THROW(prune::PruneConfig::parse("default: {activations: 1.5}\n", "bad.yaml"), Error);
}
