// Graph-level inference through the data-movement ops: the shape subgraph of a typical
// flatten (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) must resolve to constants.
#include "joule/passes/infer_shapes.h"
#include "test_tensor_util.h"

using namespace joule;
using namespace joule::testing;
using ir::Attribute;

namespace {

ir::Graph flatten_graph(std::vector<ir::Dim> x_dims) {
  ir::Graph g;
  g.opsets[""] = 13;
  g.inputs = {"x"};
  g.types["x"] = ttype(DType::Float32, std::move(x_dims));
  g.initializers["zero"] = Tensor::scalar<int64_t>(0);
  g.initializers["axes0"] = i64v({0});
  g.initializers["minus1"] = i64v({-1});
  g.add_node(node("Shape", {"x"}, {"shape"}));
  g.add_node(node("Gather", {"shape", "zero"}, {"batch"}));
  g.add_node(node("Unsqueeze", {"batch", "axes0"}, {"batch1"}));
  g.add_node(node("Concat", {"batch1", "minus1"}, {"target"}, {{"axis", Attribute{int64_t{0}}}}));
  g.add_node(node("Reshape", {"x", "target"}, {"y"}));
  g.outputs = {"y"};
  return g;
}

TEST(TensorGraph, ShapeSubgraphFoldsToConstants) {
  ir::Graph g = flatten_graph({S(2), S(3), S(4)});
  auto r = passes::infer_shapes(g);
  ASSERT_TRUE(r.constants.count("target"));
  EXPECT_EQ(vals<int64_t>(r.constants.at("target")), (std::vector<int64_t>{2, -1}));
  const ir::TensorType& y = g.types.at("y");
  ASSERT_TRUE(y.is_static());
  EXPECT_EQ(y.static_shape(), (Shape{2, 12}));
}

TEST(TensorGraph, SymbolicBatchKeepsRank) {
  ir::Graph g = flatten_graph({P("N"), S(3), S(4)});
  passes::infer_shapes(g);
  const ir::TensorType& t = g.types.at("target");
  ASSERT_TRUE(t.has_shape);
  EXPECT_EQ(t.dims[0], S(2));
  const ir::TensorType& y = g.types.at("y");
  ASSERT_TRUE(y.has_shape);
  EXPECT_EQ(y.dims.size(), 2u);
}

}  // namespace
