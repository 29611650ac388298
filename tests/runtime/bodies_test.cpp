// Control-flow bodies as planned sessions (runtime/bodies.h): a Loop whose body convolves its
// carried value with an outer-scope weight runs on the fast kernels, agrees with the reference
// interpreter, reports each body node to the parent's observers, and falls back to the
// interpreter (saying why) for a body that cannot be planned.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "graph_builder.h"
#include "joule/ops/op.h"
#include "joule/ops/subgraph_util.h"
#include "joule/runtime/bodies.h"
#include "joule/runtime/session.h"

using namespace joule;
using joule::testing::GraphBuilder;

namespace {

Tensor random_tensor(Shape s, uint32_t seed, float scale = 1.f) {
  Tensor t(DType::Float32, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// acc <- Sigmoid(Relu(Conv(acc, w) + bias)) `trips` times (w and bias outer-scope values), and
// each iteration's mean over H,W stacked as a scan output. The carried value's declared type
// has no shape (as exporters often write it).
ir::Graph conv_loop(int64_t trips) {
  GraphBuilder body;
  body.input("i", DType::Int64, {}).input("c", DType::Bool, {});
  body.g.inputs.push_back("acc");
  body.g.types["acc"].dtype = DType::Float32;  // no shape
  body.node("Conv", {"acc", "w", "bias"}, {"y"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, "body_conv")
      .node("Relu", {"y"}, {"r"}, {}, "body_relu")
      .node("Sigmoid", {"r"}, {"acc2"}, {}, "body_sigmoid")
      .node("ReduceMean", {"acc2"}, {"m"}, {{"axes", std::vector<int64_t>{2, 3}}, {"keepdims", int64_t{0}}}, "body_mean")
      .node("Identity", {"c"}, {"c2"}, {}, "body_cond")
      .output("c2")
      .output("acc2")
      .output("m");
  body.g.name = "body";
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 8, 12, 12})
      .init("trips", Tensor::scalar<int64_t>(trips))
      .init("w", random_tensor({8, 8, 3, 3}, 1, 0.3f))
      .init("bias", random_tensor({8}, 2, 0.1f))
      .node("Loop", {"trips", "", "x", "w", "bias"}, {"out", "means"}, {{"body", std::make_shared<const ir::Graph>(body.g)}}, "loop")
      .output("out")
      .output("means");
  b.g.nodes[0]->captured = {"w", "bias"};
  return b.build();
}

struct BodyCounter : runtime::Observer {
  std::map<std::string, int> calls;  // by body node name
  std::map<std::string, std::string> algorithm;
  int top_level = 0;
  void after_node(size_t, const ir::Node&, const std::vector<const Tensor*>&, const std::vector<Tensor>&) override { ++top_level; }
  void body_node(size_t step, const ir::Node& owner, const std::string& attribute, const ir::Node& n, const std::string& algo,
                 double ms) override {
    EXPECT_EQ(step, 0u);
    EXPECT_EQ(owner.name, "loop");
    EXPECT_EQ(attribute, "body");
    EXPECT_GE(ms, 0.0);
    ++calls[n.name];
    algorithm[n.name] = algo;
  }
};

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::fabs(double(a.data<float>()[i]) - b.data<float>()[i]));
  return m;
}

TEST(Bodies, LoopBodyRunsOnFastKernelsAndMatchesTheInterpreter) {
  const Tensor x = random_tensor({1, 8, 12, 12}, 3);
  runtime::Session fast(conv_loop(5));
  kernels::AlgoSpec ref;
  ref.policy = "reference";
  runtime::SessionOptions ro;
  ro.algo = ref;
  runtime::Session slow(conv_loop(5), ro);
  const auto a = fast.run({{"x", x}}), b = slow.run({{"x", x}});
  EXPECT_LT(max_abs_diff(a.at("out"), b.at("out")), 1e-5);
  EXPECT_EQ(a.at("means").shape(), (Shape{5, 1, 8}));
  EXPECT_LT(max_abs_diff(a.at("means"), b.at("means")), 1e-5);

  // The body's nodes got algorithms of their own; under the reference policy none.
  const runtime::Bodies* bodies = fast.step_bodies(0);
  ASSERT_NE(bodies, nullptr);
  auto stats = bodies->stats();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].attribute, "body");
  EXPECT_EQ(stats[0].runs, 5);
  EXPECT_EQ(stats[0].fallback, "");
  ASSERT_EQ(stats[0].algorithms.size(), 5u);
  int fast_nodes = 0;
  for (const std::string& algo : stats[0].algorithms) fast_nodes += algo != "reference";
  EXPECT_GE(fast_nodes, 3) << "Conv, Relu and Sigmoid have fast algorithms";
  const auto slow_stats = slow.step_bodies(0)->stats();
  for (const std::string& algo : slow_stats[0].algorithms) EXPECT_EQ(algo, "reference");

  // A second run reuses the body's session and gives the same result.
  const auto again = fast.run({{"x", x}});
  EXPECT_EQ(max_abs_diff(again.at("out"), a.at("out")), 0.0);
  EXPECT_EQ(bodies->stats()[0].runs, 10);
}

TEST(Bodies, BodyNodesAreReportedToTheParentsObservers) {
  runtime::Session s(conv_loop(3));
  BodyCounter counter;
  s.add_observer(&counter);
  s.run({{"x", random_tensor({1, 8, 12, 12}, 4)}});
  EXPECT_EQ(counter.top_level, 1);  // the Loop node itself
  ASSERT_EQ(counter.calls.size(), 5u);
  for (const auto& [name, n] : counter.calls) EXPECT_EQ(n, 3) << name;
  EXPECT_NE(counter.algorithm.at("body_relu"), "reference");
}

TEST(Bodies, InterpreterAgreesWithThePlannedBody) {
  // The reference interpreter on its own (no BodyRunner) against the planned session.
  const ir::Graph g = conv_loop(2);
  const ir::Node& loop = *g.nodes[0];
  const Tensor x = random_tensor({1, 8, 12, 12}, 5);
  const Tensor trips = Tensor::scalar<int64_t>(2);
  const Tensor& w = g.initializers.at("w");
  const Tensor& bias = g.initializers.at("bias");
  ThreadPool pool(1);
  ops::KernelContext k{loop, 17, {&trips, nullptr, &x, &w, &bias}, {}, &pool};
  k.outputs.resize(2);
  ops::find_op("", "Loop")->run(k);
  runtime::Session s(g);
  const auto out = s.run({{"x", x}});
  EXPECT_LT(max_abs_diff(k.outputs[0], out.at("out")), 1e-5);
}

TEST(Bodies, ABodyThatCannotBePlannedRunsOnTheInterpreterAndSaysWhy) {
  // The body reads a value nothing defines: planning refuses it, the interpreter runs it (and
  // fails the same way only if that branch is taken).
  GraphBuilder then_b, else_b;
  then_b.node("Neg", {"x"}, {"t"}).output("t");
  else_b.node("Neg", {"nowhere"}, {"e"}).output("e");
  GraphBuilder b;
  b.input("x", DType::Float32, {3})
      .input("cond", DType::Bool, {})
      .node("If", {"cond", "x"}, {"y"},
            {{"then_branch", std::make_shared<const ir::Graph>(then_b.g)}, {"else_branch", std::make_shared<const ir::Graph>(else_b.g)}},
            "branch")
      .output("y");
  b.g.nodes[0]->captured = {"x"};
  runtime::Session s(b.build());
  const Tensor x = Tensor::from_vector<float>({1, -2, 3}, {3});
  const auto out = s.run({{"x", x}, {"cond", Tensor::scalar<bool>(true)}});
  EXPECT_FLOAT_EQ(out.at("y").data<float>()[1], 2.f);
  EXPECT_THROW(s.run({{"x", x}, {"cond", Tensor::scalar<bool>(false)}}), Error);
  bool fell_back = false;
  for (const auto& st : s.step_bodies(0)->stats())
    if (st.attribute == "else_branch") fell_back = st.fallback.find("nowhere") != std::string::npos;
  EXPECT_TRUE(fell_back);
}

TEST(Bodies, ValuesHeldBySequencesAreNotReusedByTheMemoryPlan) {
  // r is inserted into a sequence; later nodes of the same shape would reuse its arena buffer
  // if it were planned there, changing the item the sequence holds.
  GraphBuilder b;
  b.input("x", DType::Float32, {64})
      .init("zero", Tensor::scalar<int64_t>(0))
      .node("Relu", {"x"}, {"r"})
      .node("SequenceConstruct", {"r"}, {"seq"})
      .node("Neg", {"x"}, {"n1"})
      .node("Neg", {"n1"}, {"n2"})
      .node("Neg", {"n2"}, {"n3"})
      .node("SequenceAt", {"seq", "zero"}, {"item"})
      .node("Add", {"item", "n3"}, {"y"})
      .output("y");
  runtime::Session s(b.build());
  const Tensor x = random_tensor({64}, 6);
  const Tensor y = s.run({{"x", x}}).at("y");
  for (int64_t i = 0; i < 64; ++i) {
    const float v = x.data<float>()[i];
    EXPECT_FLOAT_EQ(y.data<float>()[i], std::max(v, 0.f) - v) << i;
  }
}

}  // namespace
