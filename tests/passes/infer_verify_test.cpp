#include <gtest/gtest.h>

#include "graph_builder.h"
#include "joule/passes/annotate_costs.h"
#include "joule/passes/check_support.h"
#include "joule/passes/infer_shapes.h"
#include "joule/passes/verify.h"

using namespace joule;
using joule::testing::GraphBuilder;

// Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as PyTorch exports flatten(x, 1).
TEST(InferShapes, PropagatesConstantsThroughShapeSubgraph) {
  ir::Graph g = joule::testing::torch_flatten_graph().output("flat").build();
  auto r = passes::infer_shapes(g);
  ASSERT_TRUE(g.type_of("flat")->is_static());
  EXPECT_EQ(g.type_of("flat")->static_shape(), (Shape{2, 60}));
  ASSERT_TRUE(r.constants.count("shape"));
  EXPECT_EQ(r.constants["shape"].to_int_vector(), (std::vector<int64_t>{2, -1}));
}

TEST(InferShapes, KeepsSymbolicBatchAndOverridesInputShapes) {
  ir::Graph g = GraphBuilder()
                    .input_sym("x", DType::Float32, {ir::Dim{-1, "N"}, ir::Dim{8, ""}})
                    .init("w", Tensor(DType::Float32, {8, 3}))
                    .node("MatMul", {"x", "w"}, {"y"})
                    .node("Relu", {"y"}, {"z"})
                    .output("z")
                    .build();
  passes::infer_shapes(g);
  EXPECT_EQ(g.type_of("z")->str(), "float32[N,3]");
  passes::infer_shapes(g, {{"x", {5, 8}}});
  EXPECT_EQ(g.type_of("z")->str(), "float32[5,3]");
  EXPECT_THROW(passes::infer_shapes(g, {{"nope", {1}}}), Error);
}

TEST(InferShapes, InconsistentShapesNameTheNode) {
  ir::Graph g = GraphBuilder()
                    .input("a", DType::Float32, {2, 3})
                    .input("b", DType::Float32, {4, 3})
                    .node("Add", {"a", "b"}, {"c"}, {}, "bad_add")
                    .output("c")
                    .build();
  try {
    passes::infer_shapes(g);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad_add"), std::string::npos);
  }
}

TEST(Verify, FindsDanglingDuplicateAndTypeMismatch) {
  ir::Graph g = GraphBuilder()
                    .input("x", DType::Float32, {2})
                    .node("Relu", {"nowhere"}, {"a"}, {}, "r")
                    .node("Relu", {"x"}, {"a"}, {}, "r")
                    .output("a")
                    .output("missing")
                    .build();
  auto bad = passes::verify(g);
  std::string all;
  for (auto& b : bad) all += b + "\n";
  EXPECT_NE(all.find("used twice"), std::string::npos);
  EXPECT_NE(all.find("defined twice"), std::string::npos);
  EXPECT_NE(all.find("'nowhere'"), std::string::npos);
  EXPECT_NE(all.find("'missing'"), std::string::npos);

  ir::Graph t = GraphBuilder().input("x", DType::Float32, {2}).node("Relu", {"x"}, {"y"}).output("y").build();
  EXPECT_TRUE(passes::verify(t).empty());
  t.types["y"] = ir::TensorType::of(DType::Int64, {2});  // declared output type disagrees
  ASSERT_EQ(passes::verify(t).size(), 1u);
  EXPECT_THROW(passes::require_valid(t, "m"), Error);
}

TEST(CheckSupport, ListsEveryUnsupportedNodeAtOnce) {
  ir::Graph g = GraphBuilder()
                    .input("x", DType::Float32, {2})
                    .node("FancyOp", {"x"}, {"a"}, {}, "f1")
                    .node("Relu", {"a"}, {"b"})
                    .node("OtherOp", {"b"}, {"c"}, {}, "f2")
                    .output("c")
                    .build();
  auto bad = passes::find_unsupported(g);
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_NE(bad[0].find("f1"), std::string::npos);
  EXPECT_NE(bad[1].find("OtherOp"), std::string::npos);
  try {
    passes::require_supported(g, "m.onnx");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("2 unsupported nodes"), std::string::npos);
  }
}

TEST(AnnotateCosts, ConvMacsAndGraphTotals) {
  ir::Graph g = GraphBuilder()
                    .input("x", DType::Float32, {1, 3, 8, 8})
                    .init("w", Tensor(DType::Float32, {16, 3, 3, 3}))
                    .node("Conv", {"x", "w"}, {"y"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, "conv")
                    .node("Relu", {"y"}, {"z"})
                    .output("z")
                    .build();
  passes::infer_shapes(g);
  auto tot = passes::annotate_costs(g);
  const double conv_macs = 16.0 * 8 * 8 * 3 * 3 * 3;
  EXPECT_DOUBLE_EQ(g.nodes[0]->meta["common"]["macs"].get<double>(), conv_macs);
  EXPECT_EQ(g.nodes[0]->meta["common"]["params"].get<int64_t>(), 16 * 27);
  EXPECT_GE(tot.flops, 2 * conv_macs);
  EXPECT_EQ(tot.nodes_without_shapes, 0u);
}
