#include <gtest/gtest.h>

#include "graph_builder.h"
#include "joule/ir/printer.h"

using namespace joule;
using joule::testing::GraphBuilder;

namespace {
ir::Graph chain() {
  return GraphBuilder()
      .input("x", DType::Float32, {1, 4})
      .node("Relu", {"x"}, {"a"}, {}, "r1")
      .node("Neg", {"a"}, {"b"}, {}, "n1")
      .node("Add", {"a", "b"}, {"y"}, {}, "add")
      .node("Sigmoid", {"x"}, {"unused"}, {}, "dead")
      .output("y")
      .build();
}
}  // namespace

TEST(Graph, TopoOrderPutsProducersFirst) {
  ir::Graph g = chain();
  std::swap(g.nodes[0], g.nodes[2]);  // scramble
  auto order = g.topo_order();
  std::map<std::string, size_t> pos;
  for (size_t i = 0; i < order.size(); ++i) pos[g.nodes[order[i]]->name] = i;
  EXPECT_LT(pos["r1"], pos["n1"]);
  EXPECT_LT(pos["n1"], pos["add"]);
  g.sort_topologically();
  EXPECT_EQ(g.nodes.back()->name == "add" || g.nodes.back()->name == "dead", true);
}

TEST(Graph, CycleIsReportedWithANode) {
  ir::Graph g = GraphBuilder()
                    .input("x", DType::Float32, {2})
                    .node("Add", {"x", "b"}, {"a"}, {}, "first")
                    .node("Relu", {"a"}, {"b"}, {}, "second")
                    .output("b")
                    .build();
  try {
    g.topo_order();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos);
  }
}

TEST(Graph, RemoveDeadNodesKeepsLiveOnes) {
  ir::Graph g = chain();
  g.initializers["w_unused"] = Tensor(DType::Float32, {3});
  EXPECT_EQ(g.remove_dead_nodes(), 1u);
  EXPECT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.initializers.count("w_unused"), 0u);
}

TEST(Graph, CopyIsDeepAndUniqueNamesAreFresh) {
  ir::Graph g = chain();
  ir::Graph c = g;
  c.nodes[0]->name = "changed";
  EXPECT_EQ(g.nodes[0]->name, "r1");
  EXPECT_EQ(g.unique_name("r1"), "r1_1");
  EXPECT_EQ(g.unique_name("fresh"), "fresh");
}

TEST(Node, AttributeAccessorsCheckTypes) {
  ir::Node n;
  n.name = "c";
  n.op_type = "Conv";
  n.attrs["group"] = int64_t{2};
  n.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  n.attrs["auto_pad"] = std::string("NOTSET");
  EXPECT_EQ(n.attr_int("group", 1), 2);
  EXPECT_EQ(n.attr_int("missing", 7), 7);
  EXPECT_EQ(n.attr_ints("pads").size(), 4u);
  EXPECT_EQ(n.attr_string("auto_pad", ""), "NOTSET");
  EXPECT_THROW(n.attr_int("pads", 0), Error);
  EXPECT_THROW(n.attr_string("group", ""), Error);
  n.inputs = {"x", "", ""};
  EXPECT_EQ(n.input_count(), 1u);
}

TEST(Printer, TextAndDotMentionEveryNode) {
  ir::Graph g = chain();
  std::string txt = ir::to_text(g), dot = ir::to_dot(g);
  for (auto& n : g.nodes) {
    EXPECT_NE(txt.find(n->name), std::string::npos);
    EXPECT_NE(dot.find(n->name), std::string::npos);
  }
  EXPECT_EQ(dot.rfind("digraph", 0), 0u);
  EXPECT_NE(txt.find("return %y"), std::string::npos);
}

// A Loop's body and an If nested in it appear in the text (nested blocks) and in the DOT
// (dashed clusters, each entered from its owner), node by node.
TEST(Printer, TextAndDotShowControlFlowBodies) {
  ir::Graph then_g, else_g, body;
  auto add = [](ir::Graph& g, const std::string& op, std::vector<std::string> in, std::vector<std::string> out, const std::string& name) {
    ir::Node n;
    n.op_type = op;
    n.name = name;
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    g.add_node(std::move(n));
  };
  add(then_g, "Neg", {"acc"}, {"t"}, "then_neg");
  then_g.outputs = {"t"};
  add(else_g, "Abs", {"acc"}, {"e"}, "else_abs");
  else_g.outputs = {"e"};
  body.name = "loop_body";
  body.inputs = {"i", "c", "acc"};
  add(body, "Identity", {"c"}, {"c2"}, "body_cond");
  ir::Node branch;
  branch.op_type = "If";
  branch.name = "body_if";
  branch.inputs = {"c", "acc"};
  branch.captured = {"acc"};
  branch.outputs = {"acc2"};
  branch.attrs["then_branch"] = std::make_shared<const ir::Graph>(then_g);
  branch.attrs["else_branch"] = std::make_shared<const ir::Graph>(else_g);
  body.add_node(std::move(branch));
  body.outputs = {"c2", "acc2"};
  ir::Graph g;
  g.inputs = {"n", "x"};
  ir::Node loop;
  loop.op_type = "Loop";
  loop.name = "the_loop";
  loop.inputs = {"n", "", "x"};
  loop.outputs = {"y"};
  loop.attrs["body"] = std::make_shared<const ir::Graph>(body);
  g.add_node(std::move(loop));
  g.outputs = {"y"};
  const std::string txt = ir::to_text(g), dot = ir::to_dot(g);
  for (const std::string name : {"body_cond", "body_if", "then_neg", "else_abs"}) {
    EXPECT_NE(txt.find("# " + name), std::string::npos) << name;
    EXPECT_NE(dot.find(name), std::string::npos) << name;
  }
  EXPECT_NE(txt.find("body: graph loop_body"), std::string::npos) << txt;
  EXPECT_NE(dot.find("subgraph cluster_0"), std::string::npos);
  EXPECT_NE(dot.find("subgraph cluster_2"), std::string::npos) << "the If's two branches nested in the body's cluster";
  EXPECT_NE(dot.find("n0 -> b0_n0 [style=dotted, lhead=cluster_0]"), std::string::npos) << dot;
}
