// Every gradient rule against central finite differences, in float64: small graphs whose
// tensors are all trained initializers, a loss (mean squared error against random targets, or
// cross entropy), the analytic gradient from the training graph and (L(w + h) - L(w - h)) / 2h.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "graph_builder.h"
#include "joule/core/error.h"
#include "joule/runtime/session.h"
#include "joule/train/expand_gradient.h"
#include "joule/train/train_graph.h"

using namespace joule;
using joule::testing::GraphBuilder;
using Ints = std::vector<int64_t>;

namespace {

Tensor rnd(Shape s, uint32_t seed, double lo = -1, double hi = 1) {
  Tensor t(DType::Float64, std::move(s));
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = u(g);
  return t;
}

struct Checked {
  size_t params = 0, elements = 0;
};

// Builds the training graph of `model`, feeds every param its initial value, and compares the
// gradient of each param with finite differences at up to `per_param` elements.
Checked check(const ir::Graph& model, const std::string& loss = "mse", const std::string& bn = "train",
              const std::vector<std::string>& frozen = {}, size_t per_param = 12, double tol = 1e-6) {
  train::TrainGraphOptions o;
  o.loss = loss;
  o.bn = bn;
  o.frozen = frozen;
  const train::TrainGraph t = train::build_train_graph(model, o);
  runtime::SessionOptions so;
  so.threads = 1;
  runtime::Session s(t.graph, so);
  runtime::TensorMap in;
  uint32_t seed = 100;
  for (const std::string& x : t.inputs) in[x] = rnd(t.graph.type_of(x)->static_shape(), seed++);
  for (const std::string& p : t.params) in[p] = model.initializers.at(p).clone();
  for (auto& st : t.state) in[st.input] = model.initializers.at(st.input).clone();
  if (!t.dropout_seed.empty()) in[t.dropout_seed] = Tensor::scalar<int64_t>(7);
  const ir::TensorType* tt = t.graph.type_of(t.target);
  if (tt->dtype == DType::Int64) {
    Tensor l(DType::Int64, tt->static_shape());
    const int64_t classes = t.graph.type_of(t.output)->static_shape()[1];
    for (int64_t i = 0; i < l.numel(); ++i) l.data<int64_t>()[i] = (i * 7 + 3) % classes;
    in[t.target] = l;
  } else {
    in[t.target] = rnd(tt->static_shape(), 99);
  }
  const runtime::TensorMap out = s.run(in);
  auto loss_at = [&]() { return s.run(in).at(t.loss).value_as_double(0); };
  Checked c;
  for (size_t k = 0; k < t.params.size(); ++k) {
    const std::string& p = t.params[k];
    const Tensor g = out.at(t.grads[k]);
    Tensor w = in[p];
    EXPECT_EQ(g.shape(), w.shape()) << p;
    if (g.shape() != w.shape()) continue;
    const int64_t n = w.numel();
    const int64_t step = std::max<int64_t>(1, n / static_cast<int64_t>(per_param));
    for (int64_t i = 0; i < n; i += step) {
      const double h = 1e-6, w0 = w.data<double>()[i];
      w.data<double>()[i] = w0 + h;
      const double lp = loss_at();
      w.data<double>()[i] = w0 - h;
      const double lm = loss_at();
      w.data<double>()[i] = w0;
      const double numeric = (lp - lm) / (2 * h), analytic = g.value_as_double(i);
      EXPECT_NEAR(analytic, numeric, tol * std::max(1.0, std::fabs(numeric))) << p << "[" << i << "]";
      ++c.elements;
    }
    ++c.params;
  }
  return c;
}

// A model whose initializers `x` (and the others given) feed op `op`; output "y".
GraphBuilder unary(const std::string& op, const Shape& s, std::map<std::string, ir::Attribute> attrs = {},
                   double lo = -2, double hi = 2) {
  GraphBuilder b;
  b.init("x", rnd(s, 1, lo, hi)).node(op, {"x"}, {"y"}, std::move(attrs)).output("y");
  return b;
}

}  // namespace

TEST(Grad, Activations) {
  const Shape s = {2, 3, 4};
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "HardSwish", "Softplus", "Erf", "Exp", "Abs", "Neg", "Identity"})
    EXPECT_EQ(check(unary(op, s).build()).params, 1u) << op;
  check(unary("LeakyRelu", s, {{"alpha", 0.1f}}).build());
  check(unary("Elu", s, {{"alpha", 0.7f}}).build());
  check(unary("HardSigmoid", s, {{"alpha", 0.3f}, {"beta", 0.4f}}).build());
  for (const char* op : {"Log", "Sqrt", "Reciprocal"}) check(unary(op, s, {}, 0.5, 2).build());
  GraphBuilder pa = unary("PruneActivation", s, {{"ratio", 0.5f}});  // the kept half's gradient
  pa.g.nodes[0]->domain = "joule";
  check(pa.build());
  GraphBuilder gelu = unary("Gelu", s);
  gelu.g.nodes[0]->domain = "joule";
  check(gelu.build());
  gelu.g.nodes[0]->attrs["approximate"] = std::string("tanh");
  check(gelu.build());
  GraphBuilder clip;
  clip.init("x", rnd(s, 1, -2, 2))
      .init("lo", Tensor::scalar<double>(-0.5))
      .init("hi", Tensor::scalar<double>(0.7))
      .node("Clip", {"x", "lo", "hi"}, {"y"})
      .output("y");
  EXPECT_EQ(check(clip.build(), "mse", "train", {"lo", "hi"}).params, 1u);
}

TEST(Grad, ArithmeticWithBroadcasting) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    GraphBuilder b;
    b.init("a", rnd({2, 3, 4}, 1, 0.5, 2)).init("b", rnd({3, 1}, 2, 0.5, 2)).node(op, {"a", "b"}, {"y"}).output("y");
    EXPECT_EQ(check(b.build()).params, 2u) << op;
  }
  for (double e : {2.0, 3.0, 0.5}) {
    GraphBuilder b;
    b.init("a", rnd({3, 4}, 1, 0.5, 2)).init("e", Tensor::scalar<double>(e)).node("Pow", {"a", "e"}, {"y"}).output("y");
    EXPECT_EQ(check(b.build(), "mse", "train", {"e"}).params, 1u) << e;
  }
  GraphBuilder w;
  w.init("c", Tensor::from_vector<bool>({true, false, true}, {3}))
      .init("a", rnd({2, 3}, 1))
      .init("b", rnd({1, 3}, 2))
      .node("Where", {"c", "a", "b"}, {"y"})
      .output("y");
  EXPECT_EQ(check(w.build()).params, 2u);
  GraphBuilder sm;
  sm.init("a", rnd({2, 3}, 1)).init("b", rnd({3}, 2)).init("c", rnd({2, 1}, 3));
  sm.node("Sum", {"a", "b", "c"}, {"s"}).node("Mean", {"s", "a"}, {"y"}).output("y");
  EXPECT_EQ(check(sm.build()).params, 3u);
}

TEST(Grad, ConvolutionGeometries) {
  struct C {
    Shape x, w;
    std::map<std::string, ir::Attribute> attrs;
  };
  const std::vector<C> cases = {
      {{2, 3, 6, 5}, {4, 3, 3, 3}, {{"pads", Ints{1, 1, 1, 1}}}},
      {{1, 4, 7, 7}, {6, 2, 3, 2}, {{"group", int64_t{2}}, {"strides", Ints{2, 1}}, {"pads", Ints{1, 0, 0, 1}}}},
      {{1, 3, 8, 8}, {3, 1, 3, 3}, {{"group", int64_t{3}}, {"dilations", Ints{2, 2}}, {"pads", Ints{2, 2, 2, 2}}}},
      {{2, 2, 9}, {3, 2, 4}, {{"strides", Ints{2}}, {"auto_pad", std::string("SAME_UPPER")}}},
  };
  for (const C& k : cases) {
    GraphBuilder b;
    b.init("x", rnd(k.x, 1)).init("w", rnd(k.w, 2)).init("bias", rnd({k.w[0]}, 3));
    b.node("Conv", {"x", "w", "bias"}, {"y"}, k.attrs).output("y");
    EXPECT_EQ(check(b.build()).params, 3u) << shape_str(k.x) << " " << shape_str(k.w);
  }
}

TEST(Grad, GemmAndMatMul) {
  for (int64_t ta : {0, 1})
    for (int64_t tb : {0, 1}) {
      GraphBuilder b;
      b.init("a", rnd(ta ? Shape{4, 3} : Shape{3, 4}, 1))
          .init("b", rnd(tb ? Shape{5, 4} : Shape{4, 5}, 2))
          .init("c", rnd({5}, 3))
          .node("Gemm", {"a", "b", "c"}, {"y"}, {{"transA", ta}, {"transB", tb}, {"alpha", 0.7f}, {"beta", 1.3f}})
          .output("y");
      EXPECT_EQ(check(b.build()).params, 3u) << ta << tb;
    }
  const std::vector<std::pair<Shape, Shape>> mm = {{{3, 4}, {4, 5}}, {{2, 3, 4}, {4, 5}}, {{2, 3, 4}, {1, 4, 5}},
                                                   {{2, 1, 3, 4}, {3, 4, 2}}};
  for (auto& [as, bs] : mm) {
    GraphBuilder b;
    b.init("a", rnd(as, 1)).init("b", rnd(bs, 2)).node("MatMul", {"a", "b"}, {"y"}).output("y");
    EXPECT_EQ(check(b.build()).params, 2u) << shape_str(as) << " x " << shape_str(bs);
  }
}

TEST(Grad, Normalisations) {
  for (const char* mode : {"train", "frozen"}) {
    GraphBuilder b;
    b.init("x", rnd({3, 4, 3, 2}, 1))
        .init("s", rnd({4}, 2, 0.5, 1.5))
        .init("b", rnd({4}, 3))
        .init("m", rnd({4}, 4))
        .init("v", rnd({4}, 5, 0.5, 1.5))
        .node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, {{"epsilon", 1e-3f}})
        .output("y");
    EXPECT_EQ(check(b.build(), "mse", mode).params, 3u) << mode;
  }
  for (int64_t axis : {-1, -2}) {
    const Shape norm = axis == -1 ? Shape{5} : Shape{4, 5};
    GraphBuilder b;
    b.init("x", rnd({2, 4, 5}, 1)).init("s", rnd(norm, 2)).init("b", rnd(norm, 3));
    b.node("LayerNormalization", {"x", "s", "b"}, {"y"}, {{"axis", axis}});
    b.g.opsets[""] = 17;
    b.output("y");
    EXPECT_EQ(check(b.build()).params, 3u) << axis;
  }
}

TEST(Grad, Pools) {
  const Shape s = {2, 3, 7, 6};
  check(unary("MaxPool", s, {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}).build());
  check(unary("MaxPool", s, {{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 1}}, {"ceil_mode", int64_t{1}}}).build());
  for (int64_t include : {0, 1})
    check(unary("AveragePool", s, {{"kernel_shape", Ints{3, 2}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 0, 1, 1}},
                                   {"count_include_pad", include}})
              .build());
  check(unary("GlobalAveragePool", s).build());
  check(unary("GlobalMaxPool", s).build());
}

TEST(Grad, SoftmaxAndLosses) {
  for (int64_t axis : {1, -1}) {
    check(unary("Softmax", {2, 3, 4}, {{"axis", axis}}).build());
    check(unary("LogSoftmax", {2, 3, 4}, {{"axis", axis}}).build());
  }
  // Cross entropy on [N, C] and on [N, C, d] scores.
  for (const Shape& s : {Shape{4, 5}, Shape{2, 3, 4}}) {
    GraphBuilder b;
    b.init("x", rnd(s, 1, -3, 3)).node("Identity", {"x"}, {"y"}).output("y");
    EXPECT_EQ(check(b.build(), "cross_entropy").params, 1u) << shape_str(s);
  }
  // NegativeLogLikelihoodLoss inside the model (weights, ignore_index), under an L1 loss.
  GraphBuilder b;
  b.init("x", rnd({4, 3}, 1))
      .init("t", Tensor::from_vector<int64_t>({0, 2, 1, 2}, {4}))
      .init("w", Tensor::from_vector<double>({0.5, 1.0, 2.0}, {3}))
      .node("LogSoftmax", {"x"}, {"lp"}, {{"axis", int64_t{1}}})
      .node("NegativeLogLikelihoodLoss", {"lp", "t", "w"}, {"l"}, {{"ignore_index", int64_t{1}}})
      .node("Unsqueeze", {"l", "axes"}, {"y"})
      .init("axes", Tensor::from_vector<int64_t>({0}, {1}))
      .output("y");
  EXPECT_EQ(check(b.build(), "l1", "train", {"w"}).params, 1u);
}

TEST(Grad, DataMovement) {
  GraphBuilder r;
  r.init("x", rnd({2, 3, 4}, 1))
      .init("shape", Tensor::from_vector<int64_t>({4, 6}, {2}))
      .node("Reshape", {"x", "shape"}, {"a"})
      .node("Transpose", {"a"}, {"b"}, {{"perm", Ints{1, 0}}})
      .node("Flatten", {"b"}, {"y"}, {{"axis", int64_t{1}}})
      .output("y");
  check(r.build());
  GraphBuilder c;
  c.init("a", rnd({2, 3}, 1)).init("b", rnd({2, 2}, 2));
  c.node("Concat", {"a", "b", "a"}, {"cat"}, {{"axis", int64_t{1}}})
      .init("split", Tensor::from_vector<int64_t>({4, 4}, {2}))
      .node("Split", {"cat", "split"}, {"s0", "s1"}, {{"axis", int64_t{1}}})
      .node("Mul", {"s0", "s1"}, {"y"})
      .output("y");
  EXPECT_EQ(check(c.build()).params, 2u);
  GraphBuilder s;
  s.init("x", rnd({5, 6}, 1))
      .init("st", Tensor::from_vector<int64_t>({4, 1}, {2}))
      .init("en", Tensor::from_vector<int64_t>({-100, 6}, {2}))
      .init("ax", Tensor::from_vector<int64_t>({0, 1}, {2}))
      .init("sp", Tensor::from_vector<int64_t>({-2, 2}, {2}))
      .node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"})
      .output("y");
  check(s.build());
  for (int64_t axis : {0, 1}) {
    GraphBuilder g;
    g.init("x", rnd({4, 3}, 1))
        .init("i", Tensor::from_vector<int64_t>({0, 2, -1, 0}, {2, 2}))
        .node("Gather", {"x", "i"}, {"y"}, {{"axis", axis}})
        .output("y");
    check(g.build());
  }
  GraphBuilder pad;
  pad.init("x", rnd({2, 3, 4}, 1))
      .init("pads", Tensor::from_vector<int64_t>({0, 1, 2, 0, 2, 0}, {6}))
      .init("v", Tensor::scalar<double>(0.5))
      .node("Pad", {"x", "pads", "v"}, {"y"})
      .output("y");
  check(pad.build(), "mse", "train", {"v"});
  GraphBuilder e;
  e.init("x", rnd({3, 1}, 1))
      .init("sh", Tensor::from_vector<int64_t>({2, 3, 4}, {3}))
      .node("Expand", {"x", "sh"}, {"y"})
      .output("y");
  check(e.build());
  GraphBuilder red;
  red.init("x", rnd({2, 3, 4}, 1))
      .init("axes", Tensor::from_vector<int64_t>({1}, {1}))
      .node("ReduceSum", {"x", "axes"}, {"a"}, {{"keepdims", int64_t{0}}})
      .node("ReduceMean", {"x"}, {"b"}, {{"axes", Ints{0, 2}}})
      .node("Unsqueeze", {"a", "axes"}, {"a3"})
      .node("Mul", {"a3", "b"}, {"y"})
      .output("y");
  check(red.build());
}

TEST(Grad, DropoutKeepsItsMaskForTheStep) {
  GraphBuilder b;
  b.init("x", rnd({4, 8}, 1)).node("Dropout", {"x"}, {"y"}, {{"ratio", 0.3f}}).output("y");
  b.g.opsets[""] = 11;
  check(b.build());
}

TEST(Grad, MissingRulesAreListedAtOnce) {
  GraphBuilder b;
  b.init("x", rnd({3, 4}, 1))
      .node("Sin", {"x"}, {"a"}, {}, "s1")
      .node("Cos", {"a"}, {"b"}, {}, "c1")
      .node("Sin", {"b"}, {"y"}, {}, "s2")
      .output("y");
  try {
    train::build_train_graph(b.build(), {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Unsupported);
    const std::string m = e.what();
    EXPECT_NE(m.find("Cos (1 node: c1)"), std::string::npos) << m;
    EXPECT_NE(m.find("Sin (2 nodes"), std::string::npos) << m;
  }
}

// ONNX's Gradient node: d = (a + b) * a * z with z held constant (zs); the gradients of sum(d)
// are (2a + b) * z and a * z; a value d does not depend on gets zeros.
TEST(GradientNode, ExpandsIntoTheBackwardGraph) {
  GraphBuilder gb;
  gb.g.opsets["ai.onnx.preview.training"] = 1;
  gb.input("a", DType::Float32, {3}).input("b", DType::Float32, {3}).input("z", DType::Float32, {3})
      .input("u", DType::Float32, {2});
  gb.node("Add", {"a", "b"}, {"c"}).node("Mul", {"c", "a"}, {"ca"}).node("Mul", {"ca", "z"}, {"d"});
  gb.node("Gradient", {"a", "b", "u", "z"}, {"da", "db", "du"},
          {{"xs", ir::Attribute{std::vector<std::string>{"a", "b", "u"}}}, {"zs", ir::Attribute{std::vector<std::string>{"z"}}},
           {"y", ir::Attribute{std::string("d")}}},
          "grad");
  gb.g.nodes.back()->domain = "ai.onnx.preview.training";
  gb.output("d").output("da").output("db").output("du");
  ir::Graph g = gb.build();
  auto f = [](std::vector<float> v) {
    Tensor t(DType::Float32, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<float>());
    return t;
  };
  const runtime::TensorMap in = {{"a", f({1, 2, 3})}, {"b", f({4, 5, 6})}, {"z", f({2, 3, 4})}, {"u", f({7, 8})}};
  // a bare Session refuses the node (it needs the graph, not one kernel)
  try {
    runtime::Session(g, {}).run(in);
    FAIL() << "a Gradient node ran unexpanded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expanded into their backward graph"), std::string::npos) << e.what();
  }
  EXPECT_EQ(train::expand_gradient_nodes(g), 1u);
  runtime::TensorMap out = runtime::Session(g, {}).run(in);
  const float* da = out.at("da").data<float>();
  const float* db = out.at("db").data<float>();
  const float* du = out.at("du").data<float>();
  const std::vector<float> want_da = {(2 + 4) * 2.f, (4 + 5) * 3.f, (6 + 6) * 4.f}, want_db = {2, 6, 12};
  for (int i = 0; i < 3; ++i) {
    EXPECT_FLOAT_EQ(da[i], want_da[static_cast<size_t>(i)]);
    EXPECT_FLOAT_EQ(db[i], want_db[static_cast<size_t>(i)]);
  }
  EXPECT_EQ(out.at("du").shape(), (Shape{2}));
  EXPECT_EQ(du[0], 0.f);
  EXPECT_EQ(du[1], 0.f);
}
