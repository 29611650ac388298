#include <gtest/gtest.h>

#include "graph_builder.h"
#include "test_tensors.h"
#include "joule/runtime/session.h"

using namespace joule;
using joule::testing::GraphBuilder;

namespace {
// x -> Relu -> Neg -> Exp -> ... a chain of n elementwise nodes on a large tensor.
ir::Graph chain(int n, int64_t size) {
  GraphBuilder b;
  b.input("x", DType::Float32, {size});
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    std::string out = "v" + std::to_string(i);
    b.node(i % 2 ? "Neg" : "Relu", {prev}, {out});
    prev = out;
  }
  return b.output(prev).build();
}

struct Recorder : runtime::Observer {
  std::vector<std::string> events;
  void before_node(size_t step, const ir::Node& n, const std::vector<const Tensor*>& in) override {
    events.push_back("before " + std::to_string(step) + " " + n.name + " " + std::to_string(in.size()));
  }
  void after_node(size_t, const ir::Node& n, const std::vector<const Tensor*>&, const std::vector<Tensor>& out) override {
    events.push_back("after " + n.name + " " + out[0].describe());
  }
};
}  // namespace

TEST(Session, RunsAndFreesIntermediates) {
  const int64_t size = 1 << 16;
  runtime::Session s(chain(10, size), {1, {}, {}});
  Tensor x = joule::testing::iota_tensor({size}, -100.f);
  auto out = s.run({{"x", x}});
  const Tensor& y = out.at("v9");
  EXPECT_EQ(y.shape(), Shape{size});
  for (int64_t i : {int64_t{0}, int64_t{150}, size - 1}) {
    float v = x.data<float>()[i];
    for (int k = 0; k < 10; ++k) v = k % 2 ? -v : std::max(v, 0.f);
    EXPECT_EQ(y.data<float>()[i], v) << i;
  }
  // A chain needs at most two live buffers at a time, not ten.
  EXPECT_LE(s.peak_bytes(), 2 * size * sizeof(float));
  EXPECT_GE(s.peak_bytes(), size * sizeof(float));
}

TEST(Session, ObserversSeeEveryNodeInOrder) {
  runtime::Session s(chain(3, 4), {1, {}, {}});
  Recorder r;
  s.add_observer(&r);
  s.run({{"x", Tensor(DType::Float32, {4})}});
  ASSERT_EQ(r.events.size(), 6u);
  EXPECT_EQ(r.events[0], "before 0 Relu_0 1");
  EXPECT_EQ(r.events[1], "after Relu_0 float32[4]");
  EXPECT_EQ(r.events[5], "after Relu_2 float32[4]");
}

TEST(Session, BadInputsAreClearErrors) {
  runtime::Session s(chain(2, 4), {1, {}, {}});
  auto msg = [&](const runtime::TensorMap& in) -> std::string {
    try {
      s.run(in);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::BadInput);
      return e.what();
    }
    return "";
  };
  EXPECT_NE(msg({}).find("missing input 'x'"), std::string::npos);
  EXPECT_NE(msg({{"x", Tensor(DType::Float32, {5})}}).find("expected shape [4]"), std::string::npos);
  EXPECT_NE(msg({{"x", Tensor(DType::Int64, {4})}}).find("expected float32"), std::string::npos);
  EXPECT_NE(msg({{"x", Tensor(DType::Float32, {4})}, {"z", Tensor(DType::Float32, {4})}}).find("'z' is not an input"),
            std::string::npos);
}

TEST(Session, UnsupportedOpsAreListedBeforeRunning) {
  ir::Graph g = GraphBuilder()
                    .input("x", DType::Float32, {2})
                    .node("NoSuchOpA", {"x"}, {"a"}, {}, "first")
                    .node("NoSuchOpB", {"a"}, {"b"}, {}, "second")
                    .output("b")
                    .build();
  try {
    runtime::Session s(g);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Unsupported);
    std::string m = e.what();
    EXPECT_NE(m.find("first"), std::string::npos);
    EXPECT_NE(m.find("second"), std::string::npos);
  }
}

TEST(Session, SymbolicBatchAcceptsAnySize) {
  ir::Graph g = GraphBuilder()
                    .input_sym("x", DType::Float32, {ir::Dim{-1, "N"}, ir::Dim{3, ""}})
                    .node("Relu", {"x"}, {"y"})
                    .output("y")
                    .build();
  runtime::Session s(g, {2, {}, {}});
  EXPECT_EQ(s.run({{"x", Tensor(DType::Float32, {5, 3})}}).at("y").shape(), (Shape{5, 3}));
  EXPECT_EQ(s.run({{"x", Tensor(DType::Float32, {1, 3})}}).at("y").shape(), (Shape{1, 3}));
  EXPECT_EQ(s.threads(), 2);
}

// Weights held once: constants every consumer's kernel packed are dropped from the session;
// one that another kernel reads at run time stays; the outputs do not change.
TEST(Session, ReleasesConstantsItsKernelsPacked) {
  auto graph = [] {
    GraphBuilder b;
    b.input("x", DType::Float32, {1, 4, 8, 8})
        .init("W", joule::testing::random_tensor({4, 4, 3, 3}, 1))
        .init("B", joule::testing::random_tensor({4}, 2))
        .init("W3", joule::testing::random_tensor({4, 4, 1, 1}, 3))
        .init("S", joule::testing::random_tensor({1, 4, 1, 1}, 4));
    const std::map<std::string, ir::Attribute> pad = {{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
    b.node("Conv", {"x", "W", "B"}, {"y1"}, pad)
        .node("Conv", {"y1", "W", "B"}, {"y2"}, pad)  // W and B: two packing consumers
        .node("Mul", {"y2", "S"}, {"y3"})              // S: read at run time
        .node("Conv", {"y3", "W3"}, {"y4"})
        .node("Add", {"y4", "W3"}, {"y5"});            // W3: packed by one, read by the other
    return b.output("y5").build();
  };
  runtime::SessionOptions keep{1, {}, {}}, release = keep;
  release.release_packed_constants = true;
  runtime::Session a(graph(), keep), r(graph(), release);
  ASSERT_EQ(r.step_node(0).meta["software"]["algorithm"], r.step_node(1).meta["software"]["algorithm"]);
  ASSERT_NE(r.step_node(0).meta["software"]["algorithm"], "reference");
  EXPECT_EQ(a.released_constants(), 0u);
  EXPECT_EQ(r.released_constants(), 2u);
  EXPECT_EQ(r.weight_bytes(), (4 + 16) * sizeof(float));
  EXPECT_FALSE(r.graph().initializers.count("W"));
  EXPECT_TRUE(r.graph().initializers.count("W3"));
  const Tensor x = joule::testing::random_tensor({1, 4, 8, 8}, 5);
  const Tensor ya = a.run({{"x", x}}).at("y5"), yr = r.run({{"x", x}}).at("y5");
  ASSERT_EQ(ya.shape(), (Shape{4, 4, 8, 8}));
  for (int64_t i = 0; i < ya.numel(); ++i) ASSERT_EQ(ya.data<float>()[i], yr.data<float>()[i]) << i;
}

TEST(Session, ThreadsAboveTheCoresAreClamped) {
  joule::testing::GraphBuilder b;
  b.input("x", joule::DType::Float32, {2}).node("Relu", {"x"}, {"y"}).output("y");
  joule::runtime::SessionOptions o;
  o.threads = 100000;
  joule::runtime::Session s(b.build(), o);
  EXPECT_EQ(s.threads(), joule::ThreadPool::default_threads());
}
