// Transform passes and the pass manager: each pass on small graphs built here (the rewrite
// happened, and the outputs are those of the unrewritten graph on random inputs), and the
// default pipeline on the real PyTorch models (still matching PyTorch).
#include <gtest/gtest.h>

#include "test_tensors.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "graph_builder.h"
#include "joule/core/npy.h"
#include "joule/onnx/model_io.h"
#include "joule/passes/pass.h"
#include "joule/runtime/session.h"

using namespace joule;
using joule::testing::GraphBuilder;
using Ints = std::vector<int64_t>;
namespace fs = std::filesystem;

namespace {

using joule::testing::random_tensor;

// max |a - b| / max |b|
double rel_error(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    diff = std::max(diff, std::fabs(a.value_as_double(i) - b.value_as_double(i)));
    scale = std::max(scale, std::fabs(b.value_as_double(i)));
  }
  return diff / std::max(scale, 1e-30);
}

runtime::TensorMap random_inputs(const ir::Graph& g, uint32_t seed) {
  runtime::TensorMap m;
  for (auto& in : g.inputs) m[in] = random_tensor(g.type_of(in)->static_shape(), seed++);
  return m;
}

runtime::TensorMap run(const ir::Graph& g, const runtime::TensorMap& in) {
  runtime::SessionOptions o;
  o.threads = 1;
  runtime::Session s(g, o);
  return s.run(in);
}

size_t count_op(const ir::Graph& g, const std::string& op) {
  return static_cast<size_t>(std::count_if(g.nodes.begin(), g.nodes.end(), [&](auto& n) { return n->op_type == op; }));
}

passes::PassOptions verifying() {
  passes::PassOptions o;
  o.verify = true;
  return o;
}

// Applies `pipeline` to a copy of g; checks I/O names kept and outputs unchanged on random inputs.
ir::Graph apply_and_compare(const ir::Graph& g, const std::vector<std::string>& pipeline, double tol,
                            nlohmann::json* report = nullptr, const passes::PassOptions& o = verifying()) {
  ir::Graph h = g;
  nlohmann::json r = passes::run_pipeline(h, pipeline, o);
  if (report) *report = r;
  EXPECT_EQ(h.inputs, g.inputs);
  EXPECT_EQ(h.outputs, g.outputs);
  for (uint32_t seed : {1u, 2u}) {
    auto in = random_inputs(g, seed * 100);
    auto want = run(g, in);
    auto got = run(h, in);
    for (auto& o : g.outputs) EXPECT_LE(rel_error(got.at(o), want.at(o)), tol) << "output " << o;
  }
  return h;
}

// BN parameters with non-trivial statistics for `c` channels, named prefix_{scale,b,mean,var}.
GraphBuilder& bn_params(GraphBuilder& b, const std::string& prefix, int64_t c, uint32_t seed) {
  return b.init(prefix + "_scale", random_tensor({c}, seed, 0.5f, 1.5f))
      .init(prefix + "_b", random_tensor({c}, seed + 1))
      .init(prefix + "_mean", random_tensor({c}, seed + 2))
      .init(prefix + "_var", random_tensor({c}, seed + 3, 0.1f, 2.f));
}

std::vector<std::string> bn_inputs(const std::string& x, const std::string& p) {
  return {x, p + "_scale", p + "_b", p + "_mean", p + "_var"};
}

ir::Graph conv_bn(bool bias, int64_t group, int64_t cin, int64_t cout) {
  GraphBuilder b;
  b.input("x", DType::Float32, {2, cin, 9, 9}).init("w", random_tensor({cout, cin / group, 3, 3}, 7));
  std::vector<std::string> ins = {"x", "w"};
  if (bias) {
    b.init("bias", random_tensor({cout}, 8));
    ins.push_back("bias");
  }
  bn_params(b, "bn", cout, 20);
  b.node("Conv", ins, {"c"}, {{"group", group}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}})
      .node("BatchNormalization", bn_inputs("c", "bn"), {"y"}, {{"epsilon", 1e-3f}})
      .output("y");
  return b.build();
}

}  // namespace

// ---------------------------------------------------------------- pass manager

TEST(PassManager, ParsesPipelinesAndRejectsUnknownNames) {
  EXPECT_TRUE(passes::parse_pipeline("none").empty());
  EXPECT_EQ(passes::parse_pipeline("default"), passes::default_pipeline());
  EXPECT_EQ(passes::parse_pipeline("fold_constants, eliminate_dead_code"),
            (std::vector<std::string>{"fold_constants", "eliminate_dead_code"}));
  try {
    passes::parse_pipeline("fold_constants,fold_everything");
    FAIL() << "unknown pass accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_user_error());
    std::string m = e.what();
    EXPECT_NE(m.find("fold_everything"), std::string::npos) << m;
    EXPECT_NE(m.find("fold_batch_norm"), std::string::npos) << m;  // names the valid ones
  }
  ir::Graph g;
  EXPECT_THROW(passes::run_pipeline(g, {"nope"}), Error);
  for (auto& name : passes::default_pipeline()) EXPECT_NE(passes::find_pass(name), nullptr) << name;
}

TEST(PassManager, ReportsEveryPassWithTimesAndCounts) {
  ir::Graph g = conv_bn(false, 1, 3, 4);
  std::vector<std::string> seen;
  passes::PassOptions o = verifying();
  o.after_pass = [&](const std::string& p, const ir::Graph&) { seen.push_back(p); };
  nlohmann::json r;
  apply_and_compare(g, passes::default_pipeline(), 1e-5, &r, o);
  EXPECT_EQ(seen, passes::default_pipeline());
  ASSERT_EQ(r["passes"].size(), passes::default_pipeline().size());
  EXPECT_EQ(r["nodes_before"].get<size_t>(), 2u);
  EXPECT_EQ(r["nodes_after"].get<size_t>(), 1u);
  for (auto& p : r["passes"]) {
    EXPECT_TRUE(p.contains("ms"));
    EXPECT_TRUE(p["info"].is_object());
  }
  EXPECT_EQ(r["passes"][2]["pass"], "fold_batch_norm");
  EXPECT_TRUE(r["passes"][2]["changed"].get<bool>());
  EXPECT_EQ(r["passes"][2]["info"]["folded"].get<int>(), 1);
}

// ---------------------------------------------------------------- fold_batch_norm

TEST(FoldBatchNorm, ConvWithoutBias) {
  ir::Graph h = apply_and_compare(conv_bn(false, 1, 3, 5), {"fold_batch_norm"}, 1e-5);
  ASSERT_EQ(h.nodes.size(), 1u);
  EXPECT_EQ(h.nodes[0]->op_type, "Conv");
  EXPECT_EQ(h.nodes[0]->outputs[0], "y");
  ASSERT_EQ(h.nodes[0]->input_count(), 3u);  // bias created
  EXPECT_TRUE(h.is_initializer(h.nodes[0]->inputs[2]));
}

TEST(FoldBatchNorm, ConvWithBias) {
  ir::Graph h = apply_and_compare(conv_bn(true, 1, 3, 5), {"fold_batch_norm", "eliminate_dead_code"}, 1e-5);
  ASSERT_EQ(h.nodes.size(), 1u);
  EXPECT_EQ(h.nodes[0]->inputs[2], "bias");  // updated in place
  EXPECT_EQ(h.initializers.size(), 2u);      // w, bias: the BN parameters are gone
}

TEST(FoldBatchNorm, GroupedAndDepthwiseConv) {
  ir::Graph grouped = apply_and_compare(conv_bn(true, 2, 4, 6), {"fold_batch_norm"}, 1e-5);
  EXPECT_EQ(count_op(grouped, "BatchNormalization"), 0u);
  ir::Graph depthwise = apply_and_compare(conv_bn(false, 4, 4, 4), {"fold_batch_norm"}, 1e-5);
  EXPECT_EQ(count_op(depthwise, "BatchNormalization"), 0u);
  ir::Graph multiplier = apply_and_compare(conv_bn(false, 3, 3, 6), {"fold_batch_norm"}, 1e-5);
  EXPECT_EQ(count_op(multiplier, "BatchNormalization"), 0u);
}

TEST(FoldBatchNorm, ConvBnChainFollowedByRelu) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 3, 6, 6}).init("w", random_tensor({4, 3, 1, 1}, 3));
  bn_params(b, "bn1", 4, 30);
  bn_params(b, "bn2", 4, 40);
  b.node("Conv", {"x", "w"}, {"c"})
      .node("BatchNormalization", bn_inputs("c", "bn1"), {"b1"})
      .node("BatchNormalization", bn_inputs("b1", "bn2"), {"b2"})
      .node("Relu", {"b2"}, {"y"})
      .output("y");
  ir::Graph h = apply_and_compare(b.build(), passes::default_pipeline(), 1e-5);
  EXPECT_EQ(count_op(h, "BatchNormalization"), 0u);
  ASSERT_EQ(h.nodes.size(), 1u);  // the Relu is fused too
  EXPECT_EQ(h.nodes[0]->op_type, "FusedConv");
  EXPECT_EQ(h.nodes[0]->attr_string("activation", ""), "Relu");
}

TEST(FoldBatchNorm, GemmTransB0And1) {
  for (int64_t tb : {0, 1}) {
    for (bool with_c : {false, true}) {
      SCOPED_TRACE("transB=" + std::to_string(tb) + " C=" + std::to_string(with_c));
      GraphBuilder b;
      b.input("a", DType::Float32, {3, 5}).init("B", random_tensor(tb ? Shape{4, 5} : Shape{5, 4}, 9));
      std::vector<std::string> ins = {"a", "B"};
      if (with_c) {
        b.init("C", random_tensor({4}, 10));
        ins.push_back("C");
      }
      bn_params(b, "bn", 4, 50);
      b.node("Gemm", ins, {"g"}, {{"transB", tb}, {"alpha", 0.5f}, {"beta", 2.f}})
          .node("BatchNormalization", bn_inputs("g", "bn"), {"y"})
          .output("y");
      ir::Graph h = apply_and_compare(b.build(), {"fold_batch_norm"}, 1e-5);
      ASSERT_EQ(h.nodes.size(), 1u);
      EXPECT_EQ(h.nodes[0]->op_type, "Gemm");
    }
  }
}

TEST(FoldBatchNorm, MatMulOnlyWhenAxisOneIsTheFeatureAxis) {
  auto build = [](Shape a_shape) {
    GraphBuilder b;
    b.input("a", DType::Float32, a_shape).init("W", random_tensor({5, 4}, 11));
    bn_params(b, "bn", 4, 60);
    b.node("MatMul", {"a", "W"}, {"m"}).node("BatchNormalization", bn_inputs("m", "bn"), {"y"}).output("y");
    return b.build();
  };
  // [3,5] x [5,4] -> [3,4]: axis 1 is the feature axis; the BN becomes a bias Add.
  ir::Graph h = apply_and_compare(build({3, 5}), {"fold_batch_norm"}, 1e-5);
  EXPECT_EQ(count_op(h, "BatchNormalization"), 0u);
  EXPECT_EQ(count_op(h, "Add"), 1u);
  // [2,4,5] x [5,4] -> [2,4,4]: axis 1 is the sequence axis; folding would be wrong.
  ir::Graph k = apply_and_compare(build({2, 4, 5}), {"fold_batch_norm"}, 1e-6);
  EXPECT_EQ(count_op(k, "BatchNormalization"), 1u);
}

TEST(FoldBatchNorm, LeavesSharedWeightsSharedOutputsAndVariableParams) {
  {  // weight read by two convs
    GraphBuilder b;
    b.input("x", DType::Float32, {1, 3, 5, 5}).init("w", random_tensor({3, 3, 3, 3}, 1));
    bn_params(b, "bn", 3, 70);
    b.node("Conv", {"x", "w"}, {"c1"})
        .node("Conv", {"x", "w"}, {"c2"})
        .node("BatchNormalization", bn_inputs("c1", "bn"), {"b1"})
        .node("Add", {"b1", "c2"}, {"y"})
        .output("y");
    nlohmann::json r;
    ir::Graph h = apply_and_compare(b.build(), {"fold_batch_norm"}, 1e-6, &r);
    EXPECT_EQ(count_op(h, "BatchNormalization"), 1u);
    EXPECT_EQ(r["passes"][0]["info"]["not_folded"]["weight_shared"].get<int>(), 1);
  }
  {  // conv output read by the BN and by a Relu
    GraphBuilder b;
    b.input("x", DType::Float32, {1, 3, 5, 5}).init("w", random_tensor({3, 3, 3, 3}, 1));
    bn_params(b, "bn", 3, 70);
    b.node("Conv", {"x", "w"}, {"c"})
        .node("BatchNormalization", bn_inputs("c", "bn"), {"b1"})
        .node("Relu", {"c"}, {"r"})
        .node("Add", {"b1", "r"}, {"y"})
        .output("y");
    ir::Graph h = apply_and_compare(b.build(), {"fold_batch_norm"}, 1e-6);
    EXPECT_EQ(count_op(h, "BatchNormalization"), 1u);
  }
  {  // conv output is also a graph output
    ir::Graph g = conv_bn(false, 1, 3, 4);
    g.outputs.push_back("c");
    ir::Graph h = apply_and_compare(g, {"fold_batch_norm"}, 1e-6);
    EXPECT_EQ(count_op(h, "BatchNormalization"), 1u);
  }
  {  // BN scale is a graph input
    GraphBuilder b;
    b.input("x", DType::Float32, {1, 3, 5, 5}).input("bn_scale", DType::Float32, {3});
    b.init("w", random_tensor({3, 3, 3, 3}, 1))
        .init("bn_b", random_tensor({3}, 2))
        .init("bn_mean", random_tensor({3}, 3))
        .init("bn_var", random_tensor({3}, 4, 0.5f, 1.f));
    b.node("Conv", {"x", "w"}, {"c"}).node("BatchNormalization", bn_inputs("c", "bn"), {"y"}).output("y");
    ir::Graph h = apply_and_compare(b.build(), {"fold_batch_norm"}, 1e-6);
    EXPECT_EQ(count_op(h, "BatchNormalization"), 1u);
  }
}

// ---------------------------------------------------------------- eliminate_identity

TEST(EliminateIdentity, RemovesIdentityAndDropoutKeepingOutputNames) {
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 3})
      .init("ratio", Tensor::scalar<float>(0.3f))
      .init("train", Tensor::scalar<bool>(false))
      .node("Relu", {"x"}, {"r"})
      .node("Identity", {"r"}, {"i1"})
      .node("Dropout", {"i1", "ratio"}, {"d1"})
      .node("Dropout", {"d1", "ratio", "train"}, {"d2"})
      .node("Sigmoid", {"d2"}, {"s"})
      .node("Identity", {"s"}, {"y"})  // graph output: Sigmoid is renamed to produce "y"
      .node("Identity", {"r"}, {"y2"})  // graph output fed by a value other nodes read
      .output("y")
      .output("y2");
  nlohmann::json r;
  ir::Graph h = apply_and_compare(b.build(), {"eliminate_identity"}, 0, &r);
  EXPECT_EQ(count_op(h, "Identity"), 0u);
  EXPECT_EQ(count_op(h, "Dropout"), 0u);
  EXPECT_EQ(h.nodes.size(), 2u);
  auto& info = r["passes"][0]["info"];
  EXPECT_EQ(info["identity_removed"].get<int>(), 3);
  EXPECT_EQ(info["dropout_removed"].get<int>(), 2);
}

TEST(EliminateIdentity, RemovesCastsToTheSameDtypeOnly) {
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 3})
      .init("n", Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3}))
      .node("Cast", {"x"}, {"same"}, {{"to", int64_t{1}}})  // float -> float: removed
      .node("Relu", {"same"}, {"r"})
      .node("Cast", {"n"}, {"f"}, {{"to", int64_t{1}}})     // int64 -> float: kept
      .node("Add", {"r", "f"}, {"y"})
      .output("y");
  nlohmann::json r;
  ir::Graph h = apply_and_compare(b.build(), {"eliminate_identity"}, 0, &r);
  EXPECT_EQ(count_op(h, "Cast"), 1u);
  EXPECT_EQ(r["passes"][0]["info"]["same_type_cast_removed"].get<int>(), 1);
}

// PyTorch exports Dropout's ratio and training_mode as Constant nodes, which this pass (first in
// the pipeline) sees before fold_constants turns them into initializers.
TEST(EliminateIdentity, ReadsDropoutModeFromConstantNodes) {
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 3})
      .node("Constant", {}, {"ratio"}, {{"value", Tensor::scalar<float>(0.f)}})
      .node("Constant", {}, {"train"}, {{"value", Tensor::scalar<bool>(true)}})
      .node("Constant", {}, {"ratio5"}, {{"value", Tensor::scalar<float>(0.5f)}})
      .node("Relu", {"x"}, {"r"})
      .node("Dropout", {"r", "ratio", "train"}, {"d"})     // training, ratio 0: the identity
      .node("Dropout", {"d", "ratio5", "train"}, {"d2"})  // training, ratio 0.5: stays
      .output("d2");
  ir::Graph h = b.build();
  passes::run_pipeline(h, {"eliminate_identity"}, verifying());
  EXPECT_EQ(count_op(h, "Dropout"), 1u);
}

TEST(EliminateIdentity, KeepsWhatCannotGo) {
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 3})
      .input("train", DType::Bool, {})
      .init("ratio", Tensor::scalar<float>(0.5f))
      .node("Identity", {"x"}, {"y"})                                   // graph input -> graph output
      .node("Relu", {"x"}, {"r"})
      .node("Identity", {"r"}, {"y2"})                                  // r is a graph output too
      .node("Dropout", {"r", "ratio", "train"}, {"d"})                 // training mode not known
      .node("Dropout", {"d"}, {"d2", "mask"})                          // mask used
      .node("Cast", {"mask"}, {"m"}, {{"to", int64_t{1}}})
      .node("Add", {"d2", "m"}, {"z"})
      .output("y")
      .output("y2")
      .output("r")
      .output("z");
  ir::Graph g = b.build();
  ir::Graph h = g;
  passes::run_pipeline(h, {"eliminate_identity"}, verifying());
  EXPECT_EQ(count_op(h, "Identity"), 2u);
  EXPECT_EQ(count_op(h, "Dropout"), 2u);
  EXPECT_EQ(h.inputs, g.inputs);
  EXPECT_EQ(h.outputs, g.outputs);
}

// ---------------------------------------------------------------- fold_constants

// Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as PyTorch exports flatten(x, 1).
TEST(FoldConstants, ShapeSubgraphBecomesAReshapeWithAConstantShape) {
  ir::Graph g = joule::testing::torch_flatten_graph()
                    .node("Relu", {"flat"}, {"y"})
                    .output("y")
                    .build();
  ir::Graph h = apply_and_compare(g, {"fold_constants", "eliminate_dead_code"}, 0);
  ASSERT_EQ(h.nodes.size(), 2u);
  const ir::Node& reshape = *h.nodes[0];
  EXPECT_EQ(reshape.op_type, "Reshape");
  ASSERT_TRUE(h.is_initializer(reshape.inputs[1]));
  EXPECT_EQ(h.initializers.at(reshape.inputs[1]).to_int_vector(), (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(h.initializers.size(), 1u);  // idx0, axes, minus1 removed as dead
}

TEST(FoldConstants, SymbolicShapesStayAtRunTime) {
  ir::Graph g = GraphBuilder()
                    .input_sym("x", DType::Float32, {ir::Dim{-1, "N"}, ir::Dim{6, ""}})
                    .init("idx0", Tensor::scalar<int64_t>(0))
                    .node("Shape", {"x"}, {"s"})
                    .node("Gather", {"s", "idx0"}, {"n"}, {{"axis", int64_t{0}}})
                    .node("Cast", {"n"}, {"y"}, {{"to", int64_t{1}}})
                    .output("y")
                    .build();
  ir::Graph h = g;
  nlohmann::json r = passes::run_pipeline(h, {"fold_constants"}, verifying());
  EXPECT_EQ(h.nodes.size(), 3u);
  EXPECT_FALSE(r["passes"][0]["changed"].get<bool>());
}

TEST(FoldConstants, ConstantNodesAndWeightArithmeticBecomeInitializers) {
  Tensor big = random_tensor({300, 300}, 5);  // larger than the small-constant limit: no growth
  ir::Graph g = GraphBuilder()
                    .input("x", DType::Float32, {4, 300})
                    .init("w", big)
                    .node("Constant", {}, {"k"}, {{"value", Tensor::from_vector<float>({2.f}, {1})}})
                    .node("Transpose", {"w"}, {"wt"})
                    .node("Mul", {"wt", "k"}, {"w2"})
                    .node("MatMul", {"x", "w2"}, {"y"})
                    .output("y")
                    .build();
  ir::Graph h = apply_and_compare(g, {"fold_constants", "eliminate_dead_code"}, 1e-6);
  ASSERT_EQ(h.nodes.size(), 1u);
  EXPECT_EQ(h.nodes[0]->op_type, "MatMul");
  EXPECT_EQ(h.initializers.size(), 1u);
}

TEST(FoldConstants, SizeLimitKeepsBigExpansionsAtRunTime) {
  auto build = [](Shape target) {
    return GraphBuilder()
        .input("x", DType::Float32, target)
        .init("c", Tensor::from_vector<float>({1.f, 2.f, 3.f, 4.f}, {4}))
        .init("shape", Tensor::from_vector<int64_t>(target, {static_cast<int64_t>(target.size())}))
        .node("Expand", {"c", "shape"}, {"e"})
        .node("Add", {"x", "e"}, {"y"})
        .output("y")
        .build();
  };
  // Default limits: 512x256x4 floats from 7 constant elements is not folded.
  nlohmann::json r;
  ir::Graph h = apply_and_compare(build({512, 256, 4}), {"fold_constants"}, 0, &r);
  EXPECT_EQ(count_op(h, "Expand"), 1u);
  EXPECT_EQ(r["passes"][0]["info"]["skipped_size_limit"].get<int>(), 1);
  // Small results are folded.
  h = apply_and_compare(build({8, 4}), {"fold_constants"}, 0, &r);
  EXPECT_EQ(count_op(h, "Expand"), 0u);
  // The limits are options.
  passes::PassOptions o = verifying();
  o.fold_small_elements = 16;
  o.fold_max_growth = 2;
  h = apply_and_compare(build({8, 4}), {"fold_constants"}, 0, &r, o);
  EXPECT_EQ(count_op(h, "Expand"), 1u);
  o.fold_max_growth = 1e9;
  h = apply_and_compare(build({512, 256, 4}), {"fold_constants"}, 0, &r, o);
  EXPECT_EQ(count_op(h, "Expand"), 0u);
}

TEST(FoldConstants, NeverFoldsDropoutOrGraphOutputs) {
  ir::Graph g = GraphBuilder()
                    .input("x", DType::Float32, {3})
                    .init("c", Tensor::from_vector<float>({1.f, 2.f, 3.f}, {3}))
                    .node("Dropout", {"c"}, {"d"})
                    .node("Neg", {"c"}, {"n"})
                    .node("Add", {"x", "d"}, {"y"})
                    .output("y")
                    .output("n")
                    .build();
  ir::Graph h = apply_and_compare(g, {"fold_constants"}, 0);
  EXPECT_EQ(count_op(h, "Dropout"), 1u);
  EXPECT_EQ(count_op(h, "Neg"), 1u);
}

// ---------------------------------------------------------------- eliminate_dead_code

TEST(EliminateDeadCode, RemovesUnusedNodesAndInitializers) {
  ir::Graph g = GraphBuilder()
                    .input("x", DType::Float32, {2, 3})
                    .init("unused", random_tensor({10}, 1))
                    .init("w", random_tensor({3}, 2))
                    .node("Mul", {"x", "w"}, {"m"})
                    .node("Relu", {"m"}, {"dead1"})
                    .node("Neg", {"dead1"}, {"dead2"})
                    .node("Sigmoid", {"m"}, {"y"})
                    .output("y")
                    .build();
  nlohmann::json r;
  ir::Graph h = apply_and_compare(g, {"eliminate_dead_code"}, 0, &r);
  EXPECT_EQ(h.nodes.size(), 2u);
  EXPECT_EQ(h.initializers.size(), 1u);
  EXPECT_EQ(r["passes"][0]["info"]["nodes_removed"].get<int>(), 2);
  EXPECT_EQ(r["passes"][0]["info"]["initializers_removed"].get<int>(), 1);
  EXPECT_EQ(h.inputs, g.inputs);  // graph inputs stay even when unused
}

// An op joule lacks: the passes leave the graph for the Session to report, naming the node.
TEST(PassManager, UnsupportedOpsAreLeftForTheSessionToReport) {
  ir::Graph g = GraphBuilder()
                    .input("x", DType::Float32, {2})
                    .init("c", Tensor::from_vector<float>({1.f, 2.f}, {2}))
                    .node("Frobnicate", {"x"}, {"a"}, {}, "frob1")
                    .node("Add", {"a", "c"}, {"b"})
                    .node("Identity", {"b"}, {"y"})
                    .output("y")
                    .build();
  passes::PassOptions o;
  o.verify = false;
  EXPECT_NO_THROW(passes::run_pipeline(g, passes::default_pipeline(), o));
  try {
    runtime::Session s(g);
    FAIL() << "unsupported op accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("frob1"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- fusion passes

TEST(FuseConv, ResidualAndActivationsIntoFusedConv) {
  auto conv_graph = [](const std::string& act, bool residual) {
    GraphBuilder b;
    b.input("x", DType::Float32, {1, 3, 8, 8}).input("z", DType::Float32, {1, 4, 8, 8});
    b.init("w", random_tensor({4, 3, 3, 3}, 1)).init("b", random_tensor({4}, 2));
    b.init("lo", Tensor::scalar<float>(-0.3f)).init("hi", Tensor::scalar<float>(0.4f));
    b.node("Conv", {"x", "w", "b"}, {"c"}, {{"pads", Ints{1, 1, 1, 1}}}, "conv");
    std::string v = "c";
    if (residual) {
      b.node("Add", {"z", v}, {"s"});  // residual on the left: either order fuses
      v = "s";
    }
    if (act == "Relu") b.node("Relu", {v}, {"y"});
    if (act == "LeakyRelu") b.node("LeakyRelu", {v}, {"y"}, {{"alpha", 0.2f}});
    if (act == "Clip") b.node("Clip", {v, "lo", "hi"}, {"y"});
    if (act.empty()) b.node("Identity", {v}, {"y"});
    return b.output("y").build();
  };
  for (const std::string act : {"", "Relu", "LeakyRelu", "Clip"})
    for (bool residual : {false, true}) {
      if (act.empty() && !residual) continue;
      SCOPED_TRACE(act + (residual ? " + residual" : ""));
      nlohmann::json r;
      ir::Graph h = apply_and_compare(conv_graph(act, residual), {"fuse_conv"}, 1e-5, &r);
      EXPECT_EQ(count_op(h, "FusedConv"), 1u);
      EXPECT_EQ(h.nodes.size(), act.empty() ? 2u : 1u);  // the Identity stays
      const ir::Node& f = *h.nodes[0];
      EXPECT_EQ(f.domain, "joule");
      EXPECT_EQ(f.attr_string("activation", ""), act);
      EXPECT_EQ(f.inputs.size(), residual ? 4u : 3u);
      EXPECT_EQ(r["passes"][0]["info"]["with_residual"], residual ? 1 : 0);
    }
}

TEST(FuseConv, LeavesSharedOutputsAndMismatchedResiduals) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 3, 8, 8}).input("z", DType::Float32, {1, 4, 1, 1});
  b.init("w", random_tensor({4, 3, 3, 3}, 1)).init("w2", random_tensor({4, 3, 3, 3}, 3));
  b.node("Conv", {"x", "w"}, {"c"}, {{"pads", Ints{1, 1, 1, 1}}})
      .node("Relu", {"c"}, {"r"})
      .node("Add", {"c", "r"}, {"y1"})                       // c has two consumers
      .node("Conv", {"x", "w2"}, {"c2"}, {{"pads", Ints{1, 1, 1, 1}}})
      .node("Add", {"c2", "z"}, {"y2"})                      // broadcast residual: not fused
      .output("y1")
      .output("y2");
  ir::Graph h = apply_and_compare(b.build(), {"fuse_conv"}, 1e-6);
  EXPECT_EQ(count_op(h, "FusedConv"), 0u);
  EXPECT_EQ(h.nodes.size(), 5u);
}

// A transformer MLP as PyTorch exports it: MatMul, bias Add (the bias on either side, shaped [N]
// or [1, N]), the Erf-GELU subgraph, MatMul, bias Add, residual Add.
ir::Graph mlp_block(bool bias_left, const std::string& act) {
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 5, 8});
  b.init("w1", random_tensor({8, 12}, 1)).init("b1", random_tensor(bias_left ? Shape{1, 12} : Shape{12}, 2));
  b.init("w2", random_tensor({12, 8}, 3)).init("b2", random_tensor({8}, 4));
  b.init("sqrt2", Tensor::scalar<float>(1.4142135f)).init("one", Tensor::scalar<float>(1.f));
  b.init("half", Tensor::scalar<float>(0.5f));
  b.node("MatMul", {"x", "w1"}, {"m1"}, {}, "fc1");
  b.node("Add", bias_left ? std::vector<std::string>{"b1", "m1"} : std::vector<std::string>{"m1", "b1"}, {"h"});
  if (act == "Gelu") {
    b.node("Div", {"h", "sqrt2"}, {"q"}).node("Erf", {"q"}, {"e"}).node("Add", {"e", "one"}, {"e1"});
    b.node("Mul", {"h", "e1"}, {"t"}).node("Mul", {"t", "half"}, {"a"});
  } else {
    b.node(act, {"h"}, {"a"});
  }
  b.node("MatMul", {"a", "w2"}, {"m2"}, {}, "fc2").node("Add", {"m2", "b2"}, {"o"}).node("Add", {"x", "o"}, {"y"});
  return b.output("y").build();
}

TEST(FuseMatMul, BiasGeluAndResidualIntoFusedMatMul) {
  for (const std::string act : {"Gelu", "Relu"})
    for (bool bias_left : {false, true}) {
      SCOPED_TRACE(act + (bias_left ? " bias on the left" : ""));
      nlohmann::json r;
      ir::Graph h = apply_and_compare(mlp_block(bias_left, act), {"fuse_gelu", "fuse_matmul"}, 1e-5, &r);
      ASSERT_EQ(h.nodes.size(), 2u);
      const ir::Node& fc1 = *h.nodes[0];
      const ir::Node& fc2 = *h.nodes[1];
      EXPECT_EQ(fc1.op_type, "FusedMatMul");
      EXPECT_EQ(fc1.domain, "joule");
      EXPECT_EQ(fc1.inputs, (std::vector<std::string>{"x", "w1", "b1"}));
      EXPECT_EQ(fc1.attr_string("activation", ""), act);
      EXPECT_EQ(fc2.inputs, (std::vector<std::string>{"a", "w2", "b2", "x"}));
      EXPECT_EQ(fc2.attr_string("activation", ""), "");
      EXPECT_EQ(r["passes"][1]["info"]["with_bias"], 2);
      EXPECT_EQ(r["passes"][1]["info"]["with_residual"], 1);
      EXPECT_EQ(r["passes"][1]["info"]["with_activation"], 1);
    }
}

TEST(FuseMatMul, LeavesWhatIsNotABiasOrIsShared) {
  GraphBuilder b;
  b.input("x", DType::Float32, {4, 8}).input("v", DType::Float32, {6});
  b.init("w", random_tensor({8, 6}, 1)).init("col", random_tensor({4, 1}, 2)).init("tanh_w", random_tensor({8, 6}, 3));
  b.node("MatMul", {"x", "w"}, {"m1"}).node("Add", {"m1", "col"}, {"y1"});   // [4, 1]: a column, not a bias
  b.node("MatMul", {"x", "w"}, {"m2"}).node("Add", {"m2", "v"}, {"y2"});     // not a constant
  b.node("MatMul", {"x", "w"}, {"m3"}).node("Relu", {"m3"}, {"r3"}).node("Add", {"m3", "r3"}, {"y3"});  // m3 shared
  b.node("MatMul", {"x", "tanh_w"}, {"m4"}).node("Gelu", {"m4"}, {"y4"}, {{"approximate", std::string("tanh")}});
  b.g.opsets[""] = 20;
  ir::Graph h = apply_and_compare(b.output("y1").output("y2").output("y3").output("y4").build(), {"fuse_matmul"}, 1e-6);
  EXPECT_EQ(count_op(h, "FusedMatMul"), 0u);
  EXPECT_EQ(h.nodes.size(), 9u);
}

// PyTorch's decomposition of LayerNorm over the last axis and of the Erf GELU.
GraphBuilder transformer_block(int64_t c, bool pow_square) {
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 5, c});
  b.init("gamma", random_tensor({c}, 4, 0.5f, 1.5f)).init("beta", random_tensor({c}, 5));
  b.init("axes", Tensor::from_vector<int64_t>({-1}, {1}));
  b.init("two", Tensor::scalar<float>(2.f)).init("eps", Tensor::scalar<float>(1e-5f));
  b.init("sqrt2", Tensor::scalar<float>(1.4142135f)).init("one", Tensor::scalar<float>(1.f));
  b.init("half", Tensor::scalar<float>(0.5f));
  b.node("ReduceMean", {"x"}, {"m"}, {{"axes", Ints{-1}}})
      .node("Sub", {"x", "m"}, {"d"});
  if (pow_square)
    b.node("Pow", {"d", "two"}, {"p"});
  else
    b.node("Mul", {"d", "d"}, {"p"});
  b.node("ReduceMean", {"p"}, {"v"}, {{"axes", Ints{2}}})
      .node("Add", {"v", "eps"}, {"ve"})
      .node("Sqrt", {"ve"}, {"s"})
      .node("Div", {"d", "s"}, {"n"})
      .node("Mul", {"n", "gamma"}, {"g"})
      .node("Add", {"g", "beta"}, {"ln"})
      .node("Div", {"ln", "sqrt2"}, {"q"})
      .node("Erf", {"q"}, {"e"})
      .node("Add", {"e", "one"}, {"e1"})
      .node("Mul", {"ln", "e1"}, {"t"})
      .node("Mul", {"t", "half"}, {"y"})
      .output("y");
  return b;
}

TEST(FuseLayerNormAndGelu, DecomposedSubgraphsBecomeOneNodeEach) {
  for (bool pow_square : {true, false}) {
    SCOPED_TRACE(pow_square ? "Pow" : "Mul");
    GraphBuilder b = transformer_block(16, pow_square);
    b.g.opsets[""] = 13;
    ir::Graph h = apply_and_compare(b.build(), {"fuse_layer_norm", "fuse_gelu"}, 1e-5);
    ASSERT_EQ(h.nodes.size(), 2u);
    EXPECT_EQ(h.nodes[0]->op_type, "LayerNormalization");
    EXPECT_EQ(h.nodes[0]->domain, "joule");  // opset 13 has no LayerNormalization
    EXPECT_FLOAT_EQ(h.nodes[0]->attr_float("epsilon", 0), 1e-5f);
    EXPECT_EQ(h.nodes[1]->op_type, "Gelu");
    EXPECT_EQ(h.opset("joule"), 1);
  }
  GraphBuilder b = transformer_block(16, true);  // opset 17: ONNX's own LayerNormalization
  ir::Graph h = apply_and_compare(b.build(), {"fuse_layer_norm"}, 1e-5);
  EXPECT_EQ(h.nodes[0]->domain, "");
}

TEST(FuseLayerNormAndGelu, NearMissesAreLeftAlone) {
  // Mean over another axis, a GELU with the wrong constant, and an interior value that is
  // also a graph output (it stays computed; the fused node still replaces the root).
  GraphBuilder b = transformer_block(16, true);
  b.g.nodes[0]->attrs["axes"] = Ints{1};
  b.g.initializers["half"] = Tensor::scalar<float>(0.4f);
  ir::Graph h = apply_and_compare(b.build(), {"fuse_layer_norm", "fuse_gelu"}, 1e-6);
  EXPECT_EQ(count_op(h, "LayerNormalization"), 0u);
  EXPECT_EQ(count_op(h, "Gelu"), 0u);
  GraphBuilder c = transformer_block(16, true);
  c.output("d");
  h = apply_and_compare(c.build(), {"fuse_layer_norm", "fuse_gelu"}, 1e-5);
  EXPECT_EQ(count_op(h, "LayerNormalization"), 1u);
  EXPECT_EQ(count_op(h, "Sub"), 1u);  // still computes the extra output
}

// ---------------------------------------------------------------- fuse_pad

TEST(FusePad, ZeroPadsGoAndSpatialZeroPadsJoinConvAndCountingAveragePool) {
  const auto pads = [](std::vector<int64_t> v) {
    return Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())});
  };
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 3, 9, 8})
      .init("zero", pads({0, 0, 0, 0, 0, 0, 0, 0}))
      .init("sp", pads({0, 0, 1, 2, 0, 0, 2, 1}))
      .init("ch", pads({0, 1, 0, 0, 0, 0, 0, 0}))
      .init("W", random_tensor({4, 3, 3, 3}, 7))
      .node("Pad", {"x", "zero"}, {"p0"})                                        // removed
      .node("Pad", {"p0", "sp"}, {"p1"})                                         // into the Conv
      .node("Conv", {"p1", "W"}, {"c"}, {{"pads", std::vector<int64_t>{1, 0, 1, 0}}})
      .node("Pad", {"c", "sp"}, {"p2"})                                          // into the pool
      .node("AveragePool", {"p2"}, {"a"}, {{"kernel_shape", std::vector<int64_t>{3, 3}}})
      .node("Pad", {"a", "ch"}, {"p3"})                                          // channels: stays
      .node("Pad", {"x", "sp"}, {"p4"})                                          // ceil_mode: stays
      .node("AveragePool", {"p4"}, {"a2"}, {{"kernel_shape", std::vector<int64_t>{2, 2}},
                                            {"strides", std::vector<int64_t>{2, 2}}, {"ceil_mode", int64_t{1}}})
      .output("p3")
      .output("a2");
  nlohmann::json r;
  ir::Graph h = apply_and_compare(b.build(), {"fuse_pad"}, 1e-6, &r);
  EXPECT_EQ(count_op(h, "Pad"), 2u);
  auto& info = r["passes"][0]["info"];
  EXPECT_EQ(info["zero_pads_removed"].get<int>(), 1);
  EXPECT_EQ(info["into_conv"].get<int>(), 1);
  EXPECT_EQ(info["into_average_pool"].get<int>(), 1);
  for (auto& n : h.nodes) {
    if (n->op_type == "Conv") {
      EXPECT_EQ(n->attr_ints("pads", {}), (std::vector<int64_t>{2, 2, 3, 1}));
    }
    if (n->op_type == "AveragePool" && n->attr_int("ceil_mode", 0) == 0) {
      EXPECT_EQ(n->attr_ints("pads", {}), (std::vector<int64_t>{1, 2, 2, 1}));
      EXPECT_EQ(n->attr_int("count_include_pad", 0), 1);
    }
  }
}

TEST(FuseSwish, MulOfHardSigmoidBecomesHardSwish) {
  for (int64_t opset : {13, 14}) {
    GraphBuilder b;
    b.g.opsets[""] = opset;
    b.input("x", DType::Float32, {2, 3, 5})
        .node("HardSigmoid", {"x"}, {"h"}, {{"alpha", 1.f / 6.f}, {"beta", 0.5f}})
        .node("Mul", {"h", "x"}, {"y"})
        .node("HardSigmoid", {"x"}, {"h2"}, {{"alpha", 0.2f}})  // not HardSwish's constants
        .node("Mul", {"x", "h2"}, {"z"})
        .output("y")
        .output("z");
    ir::Graph h = apply_and_compare(b.build(), {"fuse_swish"}, 1e-6);
    EXPECT_EQ(count_op(h, "HardSwish"), 1u);
    EXPECT_EQ(count_op(h, "HardSigmoid"), 1u);
    for (auto& n : h.nodes) {
      if (n->op_type == "HardSwish") {
        EXPECT_EQ(n->domain, opset >= 14 ? "" : "joule");
      }
    }
  }
}

TEST(FuseSwish, MulOfSigmoidBecomesSiLUAndJoinsTheConv) {
  GraphBuilder b;
  b.g.opsets[""] = 13;
  b.input("x", DType::Float32, {1, 3, 9, 9})
      .init("w", joule::testing::random_tensor({8, 3, 3, 3}, 1))
      .node("Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Sigmoid", {"c"}, {"s"})
      .node("Mul", {"c", "s"}, {"y"})
      .node("Sigmoid", {"x"}, {"s2"})
      .node("Mul", {"s2", "s2"}, {"z"})  // not x * sigmoid(x)
      .output("y")
      .output("z");
  ir::Graph h = apply_and_compare(b.build(), {"fuse_swish"}, 1e-6);
  EXPECT_EQ(count_op(h, "SiLU"), 1u);
  EXPECT_EQ(count_op(h, "Sigmoid"), 1u);
  h = apply_and_compare(b.build(), {"fuse_swish", "fuse_conv"}, 1e-5);
  EXPECT_EQ(count_op(h, "SiLU"), 0u);
  ASSERT_EQ(count_op(h, "FusedConv"), 1u);
  for (auto& n : h.nodes) {
    if (n->op_type == "FusedConv") {
      EXPECT_EQ(n->attr_string("activation", ""), "SiLU");
    }
  }
}

// ---------------------------------------------------------------- real models

class PipelineOnPyTorchModel : public ::testing::TestWithParam<std::string> {};

TEST_P(PipelineOnPyTorchModel, StillMatchesPyTorch) {
  const char* root = std::getenv("JOULE_MODEL_DIR");
  if (!root) GTEST_SKIP() << "JOULE_MODEL_DIR not set (make test exports the models)";
  fs::path dir = fs::path(root) / GetParam();
  ASSERT_TRUE(fs::exists(dir / "model.onnx")) << dir << " missing: run `make fixtures`";
  ir::Graph g = onnx::load_model((dir / "model.onnx").string());
  const auto in_names = g.inputs, out_names = g.outputs;
  const size_t before = g.nodes.size();
  const size_t bn_before = count_op(g, "BatchNormalization");
  nlohmann::json r = passes::run_pipeline(g, passes::default_pipeline(), verifying());
  std::printf("%-20s nodes %zu -> %zu, BatchNormalization %zu -> %zu, initializers %zu -> %zu, %.1f ms\n",
              GetParam().c_str(), before, g.nodes.size(), bn_before, count_op(g, "BatchNormalization"),
              r["initializers_before"].get<size_t>(), r["initializers_after"].get<size_t>(), r["ms"].get<double>());
  EXPECT_EQ(g.inputs, in_names);
  EXPECT_EQ(g.outputs, out_names);
  if (GetParam() == "resnet18" || GetParam() == "mobilenet_v2") {
    EXPECT_EQ(count_op(g, "BatchNormalization"), 0u);
    EXPECT_LT(g.nodes.size(), before);
  }
  if (GetParam() == "resnet18") {
    EXPECT_EQ(count_op(g, "Relu"), 0u);  // all fused into FusedConv
  }
  if (GetParam() == "vit_small") {  // decomposed LayerNorm and Erf-GELU are fused, GELU into its MatMul
    EXPECT_EQ(count_op(g, "ReduceMean"), 0u);
    EXPECT_EQ(count_op(g, "Erf"), 0u);
    EXPECT_EQ(count_op(g, "LayerNormalization"), 9u);
    EXPECT_EQ(count_op(g, "Gelu"), 0u);
    EXPECT_EQ(count_op(g, "FusedMatMul"), 12u);  // 4 blocks x (qkv, fc1 + GELU, fc2 + residual)
    size_t gelu = 0, residual = 0;
    for (auto& n : g.nodes)
      if (n->op_type == "FusedMatMul") {
        gelu += n->attr_string("activation", "") == "Gelu";
        residual += n->has_input(3);
      }
    EXPECT_EQ(gelu, 4u);
    EXPECT_EQ(residual, 4u);
  }
  if (GetParam() == "mobilenet_v3_small") {
    EXPECT_EQ(count_op(g, "HardSigmoid"), 9u);  // the squeeze-excitation gates stay
  }
  EXPECT_LE(g.nodes.size(), before);
  runtime::Session s(std::move(g));
  Tensor x = load_npy((dir / "input.npy").string());
  Tensor ref = load_npy((dir / "output.npy").string());
  auto out = s.run({{s.input_names()[0], x}});
  double err = rel_error(out.at(s.output_names()[0]), ref);
  std::printf("%-20s max rel err vs PyTorch %.3g\n", GetParam().c_str(), err);
  EXPECT_LE(err, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Torchvision, PipelineOnPyTorchModel,
                         ::testing::Values("resnet18", "mobilenet_v2", "mobilenet_v3_small", "vit_small",
                                           "transformer_encoder"));

// The default pipeline reaches into control-flow bodies: an If whose then-branch convolves an
// outer-scope value (x) with a BatchNorm and Relu after it gets the BN folded and the Relu
// fused (FusedConv) inside the branch, with the outer-scope bias added after it; both branches
// still compute what they did, and the report lists the bodies.
TEST(Passes, DefaultPipelineOptimisesControlFlowBodies) {
  GraphBuilder then_b, else_b;
  then_b.init("w", random_tensor({4, 4, 3, 3}, 14))
      .init("scale", random_tensor({4}, 11))
      .init("shift", random_tensor({4}, 12))
      .init("mean", random_tensor({4}, 13))
      .init("var", Tensor::from_vector<float>({1.f, 2.f, 0.5f, 1.5f}, {4}))
      .node("Conv", {"x", "w"}, {"c"}, {{"pads", Ints{1, 1, 1, 1}}}, "then_conv")
      .node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"bn"}, {}, "then_bn")
      .node("Relu", {"bn"}, {"r"}, {}, "then_relu")
      .node("Add", {"r", "bias"}, {"t"}, {}, "then_add")
      .output("t");
  else_b.node("Neg", {"x"}, {"n"}, {}, "else_neg").node("Identity", {"n"}, {"e"}, {}, "else_id").output("e");
  then_b.g.name = "then", else_b.g.name = "else";
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 4, 6, 6})
      .input("cond", DType::Bool, {})
      .init("bias", random_tensor({1, 4, 1, 1}, 16))
      .node("If", {"cond", "x", "bias"}, {"y"},
            {{"then_branch", std::make_shared<const ir::Graph>(then_b.g)}, {"else_branch", std::make_shared<const ir::Graph>(else_b.g)}},
            "branch")
      .output("y");
  b.g.nodes[0]->captured = {"x", "bias"};
  const ir::Graph before = b.build();
  ir::Graph after = before;
  passes::PassOptions o;
  o.verify = true;
  const nlohmann::json report = passes::run_pipeline(after, passes::default_pipeline(), o);
  ASSERT_EQ(report["bodies"].size(), 2u);
  const ir::Graph& then_g = after.nodes[0]->attr_graph("then_branch");
  ASSERT_EQ(then_g.nodes.size(), 2u);
  EXPECT_EQ(then_g.nodes[0]->op_type, "FusedConv");
  EXPECT_EQ(then_g.nodes[1]->op_type, "Add");
  EXPECT_EQ(then_g.inputs.size(), 0u) << "the outer values added for the passes are removed again";
  EXPECT_EQ(after.nodes[0]->attr_graph("else_branch").nodes.size(), 1u) << "Identity eliminated";
  const Tensor x = random_tensor({1, 4, 6, 6}, 15);
  for (bool c : {true, false}) {
    runtime::TensorMap in = {{"x", x}, {"cond", Tensor::scalar<bool>(c)}};
    const Tensor want = runtime::Session(before).run(in).at("y");
    const Tensor got = runtime::Session(after).run(in).at("y");
    EXPECT_LT(rel_error(got, want), 1e-5) << (c ? "then" : "else");
  }
}
