// lower_int8: QDQ simulation graphs (made here through the quant library) lowered to integer
// QConv / QMatMul nodes. The lowered graph must compute what the simulation computes: codes
// within one quantization step per element, float outputs within a small tolerance; on the
// bundled Fashion-MNIST model the same top-1 on >= 95 % of 64 test images.
#include <gtest/gtest.h>

#include "test_tensors.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "graph_builder.h"
#include "joule/data/dataset.h"
#include "joule/onnx/model_io.h"
#include "joule/passes/pass.h"
#include "joule/quant/qdq.h"

using namespace joule;
using joule::testing::GraphBuilder;

namespace {

using joule::testing::random_tensor;

// Every value both graphs compute under the same name, from one run each.
struct Grab : runtime::Observer {
  std::map<std::string, Tensor> values;
  void after_node(size_t, const ir::Node& n, const std::vector<const Tensor*>&, const std::vector<Tensor>& o) override {
    for (size_t i = 0; i < o.size() && i < n.outputs.size(); ++i) values[n.outputs[i]] = o[i].clone();
  }
};

ir::Graph quantized(ir::Graph g, const std::string& yaml, const std::vector<runtime::TensorMap>& calib) {
  quant::prepare_for_quantization(g);
  quant::QuantPlan plan = quant::plan_quantization(g, quant::resolve(g, quant::QuantConfig::parse(yaml, "q.yaml")));
  size_t k = 0;
  quant::calibrate(g, plan, [&](runtime::TensorMap& in) { return k < calib.size() ? (in = calib[k++], true) : false; }, {});
  return quant::insert_qdq(g, plan);
}

int count(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (auto& node : g.nodes) n += node->op_type == op;
  return n;
}

// x[2,3,12,12] -> Conv 3x3 -> Relu -> MaxPool -> depthwise Conv s2 -> Clip -> Conv 1x1 (+ residual
// of the depthwise output) -> Relu -> Flatten -> Gemm(transB) -> MatMul
ir::Graph small_net() {
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 3, 12, 12})
      .init("w1", random_tensor({8, 3, 3, 3}, 1, -0.5f, 0.5f))
      .init("b1", random_tensor({8}, 2))
      .init("w2", random_tensor({8, 1, 3, 3}, 3, -0.5f, 0.5f))
      .init("w3", random_tensor({8, 8, 1, 1}, 4, -0.5f, 0.5f))
      .init("b3", random_tensor({8}, 5))
      .init("lo", Tensor::scalar<float>(0.f))
      .init("hi", Tensor::scalar<float>(6.f))
      .init("wf", random_tensor({10, 72}, 6, -0.2f, 0.2f))
      .init("bf", random_tensor({10}, 7))
      .init("wm", random_tensor({10, 4}, 8))
      .node("Conv", {"x", "w1", "b1"}, {"c1"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Relu", {"c1"}, {"r1"})
      .node("MaxPool", {"r1"}, {"p1"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}})
      .node("Conv", {"p1", "w2"}, {"c2"},
            {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", int64_t{8}}, {"strides", std::vector<int64_t>{2, 2}}})
      .node("Clip", {"c2", "lo", "hi"}, {"r2"})
      .node("Conv", {"r2", "w3", "b3"}, {"c3"})
      .node("Add", {"c3", "r2"}, {"s3"})
      .node("Relu", {"s3"}, {"r3"})
      .node("Flatten", {"r3"}, {"f"})
      .node("Gemm", {"f", "wf", "bf"}, {"g"}, {{"transB", int64_t{1}}})
      .node("MatMul", {"g", "wm"}, {"y"})
      .output("y");
  return b.build();
}

// x -> Conv -> SiLU (x * Sigmoid(x)) -> Conv (bias) -> HardSwish (x * HardSigmoid(x, 1/6, 1/2)) -> Conv
ir::Graph gated_net() {
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 3, 12, 12})
      .init("w1", random_tensor({8, 3, 3, 3}, 1, -0.5f, 0.5f))
      .init("w2", random_tensor({8, 8, 1, 1}, 2, -0.5f, 0.5f))
      .init("b2", random_tensor({8}, 3))
      .init("w3", random_tensor({4, 8, 1, 1}, 4, -0.5f, 0.5f))
      .node("Conv", {"x", "w1"}, {"c1"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Sigmoid", {"c1"}, {"g1"})
      .node("Mul", {"c1", "g1"}, {"a1"})
      .node("Conv", {"a1", "w2", "b2"}, {"c2"})
      .node("HardSigmoid", {"c2"}, {"g2"}, {{"alpha", 1.f / 6}, {"beta", 0.5f}})
      .node("Mul", {"g2", "c2"}, {"a2"})
      .node("Conv", {"a2", "w3"}, {"y"})
      .output("y");
  return b.build();
}

std::vector<runtime::TensorMap> random_inputs(int n, uint32_t seed) {
  std::vector<runtime::TensorMap> r;
  for (int i = 0; i < n; ++i) r.push_back({{"x", random_tensor({2, 3, 12, 12}, seed + static_cast<uint32_t>(i))}});
  return r;
}

// Runs `sim` and `low` on the inputs; every code tensor of the same name within one step, the
// final float output within `tol` (absolute).
void expect_agree(const ir::Graph& sim, const ir::Graph& low, const std::vector<runtime::TensorMap>& inputs, double tol) {
  runtime::Session ss(sim), sl(low);
  Grab gs, gl;
  ss.add_observer(&gs);
  sl.add_observer(&gl);
  int compared = 0;
  for (auto& in : inputs) {
    gs.values.clear();
    gl.values.clear();
    const Tensor ys = ss.run(in).at("y"), yl = sl.run(in).at("y");
    for (auto& [name, t] : gl.values) {
      auto it = gs.values.find(name);
      if (it == gs.values.end() || it->second.dtype() != t.dtype() || (t.dtype() != DType::UInt8 && t.dtype() != DType::Int8))
        continue;
      ASSERT_EQ(it->second.shape(), t.shape()) << name;
      ++compared;
      for (int64_t i = 0; i < t.numel(); ++i)
        ASSERT_LE(std::abs(t.value_as_int(i) - it->second.value_as_int(i)), 1) << name << " element " << i;
    }
    ASSERT_EQ(ys.shape(), yl.shape());
    for (int64_t i = 0; i < ys.numel(); ++i) EXPECT_NEAR(ys.data<float>()[i], yl.data<float>()[i], tol) << i;
  }
  EXPECT_GT(compared, 0);
}

const char* kW8A8 = R"(
ops: [Conv, Gemm, MatMul]
default:
  weight: {format: int, bits: 8, symmetric: true, granularity: per_channel, calibrator: minmax}
  input:  {format: int, bits: 8, symmetric: false, granularity: per_tensor, calibrator: minmax}
)";

// kW8A8 with an output point on the convs that feed a gate (examples/quant/w8a8_act_tables.yaml).
const char* kW8A8ActTables = R"(
ops: [Conv]
default:
  weight: {format: int, bits: 8, symmetric: true, granularity: per_channel, calibrator: minmax}
  input:  {format: int, bits: 8, symmetric: false, granularity: per_tensor, calibrator: minmax}
rules:
  - match: {type: Conv, feeds: "Sigmoid,HardSigmoid"}
    output: {format: int, bits: 8, symmetric: false, granularity: per_tensor, calibrator: minmax}
)";

const char* kS8DerivedBias = R"(
ops: [Conv, Gemm, MatMul]
default:
  weight: {format: int, bits: 8, symmetric: true, granularity: per_tensor, calibrator: minmax}
  input:  {format: int, bits: 8, symmetric: true, granularity: per_tensor, calibrator: minmax}
  bias:   {format: int, bits: 32}
)";

}  // namespace

TEST(LowerInt8, SmallNetUint8PerChannel) {
  const ir::Graph sim = quantized(small_net(), kW8A8, random_inputs(4, 10));
  for (bool then_default : {false, true}) {
    SCOPED_TRACE(then_default ? "lower_int8,default (--int8 real)" : "lower_int8");
    ir::Graph low = sim;
    std::vector<std::string> passes{"lower_int8"};
    if (then_default)
      for (const std::string& p : passes::default_pipeline()) passes.push_back(p);
    const auto report = passes::run_pipeline(low, passes);
    EXPECT_EQ(count(low, "QConv"), 3);
    EXPECT_EQ(count(low, "QMatMul"), 2);
    EXPECT_EQ(count(low, "Conv") + count(low, "FusedConv") + count(low, "Gemm") + count(low, "MatMul"), 0);
    // Conv1 -> Relu -> (Q moved above MaxPool) requantizes; the depthwise conv + Clip feeds
    // a quantized conv and the residual Add, so it keeps a float output.
    const auto& info = report["passes"].front()["info"];
    EXPECT_GE(info["requantized"].get<int>(), 1);
    EXPECT_EQ(info["quantize_moved"].get<int>(), 2);  // above MaxPool and Flatten
    EXPECT_EQ(info["clamps_folded"].get<int>(), 1);   // the Relu after the residual Add
    EXPECT_EQ(count(low, "DequantizeLinear"), 0);
    expect_agree(sim, low, random_inputs(3, 50), 0.05);
  }
}

// A Relu whose output only a QuantizeLinear reads folds into it (joule's QuantizeLinear with
// clip_min): the same codes and outputs, bit for bit, as the Relu and the ONNX op unfolded again,
// NaN and Inf inputs included, on the fast kernel and the reference.
TEST(LowerInt8, ClampsFoldIntoQuantizeExactly) {
  const ir::Graph sim = quantized(small_net(), kW8A8, random_inputs(4, 10));
  ir::Graph low = sim;
  passes::run_pipeline(low, {"lower_int8"});
  ir::Graph unfolded = low;
  int folded = 0;
  for (size_t i = 0; i < unfolded.nodes.size(); ++i) {
    ir::Node& q = *unfolded.nodes[i];
    if (q.domain != "joule" || q.op_type != "QuantizeLinear") continue;
    ++folded;
    ASSERT_EQ(q.attr_float("clip_min", -1.f), 0.f);
    EXPECT_FALSE(q.has_attr("clip_max"));
    ir::Node relu;
    relu.name = q.name + "_relu";
    relu.op_type = "Relu";
    relu.inputs = {q.inputs[0]};
    relu.outputs = {q.name + "_relu_out"};
    q.domain.clear();
    q.attrs.erase("clip_min");
    q.inputs[0] = relu.outputs[0];
    unfolded.add_node(std::move(relu));
  }
  ASSERT_EQ(folded, 1);
  unfolded.sort_topologically();
  auto inputs = random_inputs(3, 60);
  inputs[0].at("x").data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  inputs[1].at("x").data<float>()[7] = std::numeric_limits<float>::infinity();
  inputs[2].at("x").data<float>()[9] = -std::numeric_limits<float>::infinity();
  for (const char* algo : {"guess", "reference"}) {
    runtime::SessionOptions o;
    o.algo.add(algo);
    runtime::Session a(low, o), b(unfolded, o);
    for (auto& in : inputs) {
      const Tensor ya = a.run(in).at("y"), yb = b.run(in).at("y");
      ASSERT_EQ(ya.nbytes(), yb.nbytes());
      EXPECT_EQ(std::memcmp(ya.raw(), yb.raw(), ya.nbytes()), 0) << algo;
    }
  }
}

// x -> Conv -> SiLU (x * Sigmoid(x)) -> Conv -> HardSwish (x * HardSigmoid(x, 1/6, 1/2)) -> Conv:
// each gated activation moves into the QConv before it, which then requantizes its output.
TEST(LowerInt8, SwishGatesMoveIntoTheIntegerConv) {
  const ir::Graph sim = quantized(gated_net(), kW8A8, random_inputs(4, 30));
  ir::Graph low = sim;
  const auto report = passes::run_pipeline(low, {"lower_int8"});
  EXPECT_EQ(count(low, "QConv"), 3);
  EXPECT_EQ(count(low, "Sigmoid") + count(low, "HardSigmoid") + count(low, "Mul"), 0);
  std::vector<std::string> acts;
  for (auto& n : low.nodes)
    if (n->op_type == "QConv") acts.push_back(n->attr_string("activation", ""));
  EXPECT_EQ(acts, (std::vector<std::string>{"SiLU", "HardSwish", ""}));
  EXPECT_EQ(report["passes"].front()["info"]["requantized"].get<int>(), 2);
  expect_agree(sim, low, random_inputs(3, 70), 0.05);
}

// The same network with the convolutions' outputs quantized too (examples/quant/
// w8a8_act_tables.yaml): each gated activation then sits between two quantization points and
// becomes a LookupTable of the QConv's codes, whose entries are the QDQ model's own float32
// arithmetic: every code equal to the simulation's run on the reference kernels, NaN-free or not.
TEST(LowerInt8, ActivationsBetweenQuantizationPointsBecomeTables) {
  const ir::Graph sim = quantized(gated_net(), kW8A8ActTables, random_inputs(4, 30));
  ir::Graph low = sim;
  const auto report = passes::run_pipeline(low, {"lower_int8"});
  EXPECT_EQ(report["passes"].front()["info"]["tables"].get<int>(), 2);
  EXPECT_EQ(count(low, "LookupTable"), 2);
  EXPECT_EQ(count(low, "QConv"), 3);
  EXPECT_EQ(count(low, "Sigmoid") + count(low, "HardSigmoid") + count(low, "Mul"), 0);
  runtime::SessionOptions ref;
  ref.algo.add("reference");
  runtime::Session ss(sim, ref), sl(low, ref), fast(low);
  Grab gs, gl;
  ss.add_observer(&gs);
  sl.add_observer(&gl);
  auto inputs = random_inputs(3, 80);
  inputs[0].at("x").data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  int tables = 0;
  for (auto& in : inputs) {
    gs.values.clear();
    gl.values.clear();
    const Tensor ys = ss.run(in).at("y"), yl = sl.run(in).at("y"), yf = fast.run(in).at("y");
    for (auto& n : low.nodes) {
      if (n->op_type != "LookupTable") continue;
      ++tables;
      const Tensor& got = gl.values.at(n->outputs[0]);
      const Tensor& want = gs.values.at(n->outputs[0]);  // the simulation's QuantizeLinear of the same name
      ASSERT_EQ(got.nbytes(), want.nbytes());
      EXPECT_EQ(std::memcmp(got.raw(), want.raw(), got.nbytes()), 0) << n->name;
    }
    ASSERT_EQ(yl.nbytes(), yf.nbytes());
    EXPECT_EQ(std::memcmp(yl.raw(), yf.raw(), yl.nbytes()), 0) << "the permute kernel differs from the reference";
    for (int64_t i = 0; i < ys.numel(); ++i) EXPECT_NEAR(ys.data<float>()[i], yl.data<float>()[i], 0.05) << i;
  }
  EXPECT_EQ(tables, 6);
}

// A SiLU between a quantized conv output and a float reader (a squeeze-and-excitation block's
// pooling): a LookupTable of 256 floats, bit for bit the QDQ model's DequantizeLinear, Sigmoid
// and Mul on the reference kernels, and the fast (gather) kernel equal to the reference one.
TEST(LowerInt8, FloatResultsOfTabulableChainsBecomeFloatTables) {
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 3, 12, 12})
      .init("w1", random_tensor({8, 3, 3, 3}, 1, -0.5f, 0.5f))
      .node("Conv", {"x", "w1"}, {"c1"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Sigmoid", {"c1"}, {"g1"})
      .node("Mul", {"c1", "g1"}, {"s"})
      .node("GlobalAveragePool", {"s"}, {"y"})
      .output("y");
  const ir::Graph sim = quantized(b.build(), kW8A8ActTables, random_inputs(4, 30));
  ir::Graph low = sim;
  const auto report = passes::run_pipeline(low, {"lower_int8"});
  EXPECT_EQ(report["passes"].front()["info"]["float_tables"].get<int>(), 1);
  EXPECT_EQ(report["passes"].front()["info"]["tables"].get<int>(), 0);
  EXPECT_EQ(count(low, "Sigmoid") + count(low, "Mul") + count(low, "DequantizeLinear"), 0);
  runtime::SessionOptions ref;
  ref.algo.add("reference");
  runtime::Session ss(sim, ref), sl(low, ref), fast(low);
  Grab gs, gl, gf;
  ss.add_observer(&gs);
  sl.add_observer(&gl);
  fast.add_observer(&gf);
  for (auto& in : random_inputs(3, 90)) {
    ss.run(in);
    sl.run(in);
    fast.run(in);
    const Tensor &want = gs.values.at("s"), &got = gl.values.at("s"), &f = gf.values.at("s");
    ASSERT_EQ(got.dtype(), DType::Float32);
    ASSERT_EQ(got.nbytes(), want.nbytes());
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), got.nbytes()), 0);
    EXPECT_EQ(std::memcmp(f.raw(), want.raw(), f.nbytes()), 0) << "the gather kernel differs";
  }
}

TEST(LowerInt8, SmallNetInt8WithInt32Bias) {
  const ir::Graph sim = quantized(small_net(), kS8DerivedBias, random_inputs(4, 20));
  ir::Graph low = sim;
  passes::run_pipeline(low, {"lower_int8"});
  EXPECT_EQ(count(low, "QConv"), 3);
  EXPECT_EQ(count(low, "QMatMul"), 2);
  expect_agree(sim, low, random_inputs(3, 60), 0.05);
}

TEST(LowerInt8, LeavesFloatAndNonQdqGraphsAlone) {
  ir::Graph g = small_net();
  ir::Graph before = g;
  const auto report = passes::run_pipeline(g, {"lower_int8"});
  EXPECT_FALSE(report["passes"][0]["changed"].get<bool>());
  EXPECT_EQ(g.nodes.size(), before.nodes.size());
}

TEST(LowerInt8, BundledModelTop1MatchesSimulation) {
  const std::string dir = std::string(JOULE_SOURCE_DIR) + "/models/";
  data::Preprocess pp;
  pp.sample_shape = {1, 28, 28};
  pp.mean = {0.286f};
  pp.std = {0.353f};
  auto ds = data::open_dataset("/usr/share/datasets/fashion-mnist:test", pp);
  ir::Graph fp32 = onnx::load_model(dir + "fashion_cnn.onnx");
  const std::string in_name = fp32.inputs.at(0), out_name = fp32.outputs.at(0);
  auto sample = [&](size_t i) { return runtime::TensorMap{{in_name, ds->get(i).input.reshaped({1, 1, 28, 28})}}; };
  std::vector<runtime::TensorMap> calib;
  for (size_t i = 0; i < 8; ++i) calib.push_back(sample(1000 + i));
  ir::Graph sim = quantized(fp32, R"(
default:
  weight: {format: int, bits: 8, symmetric: true, granularity: per_channel, calibrator: minmax}
  input:  {format: int, bits: 8, symmetric: false, granularity: per_tensor, calibrator: percentile, percentile: 99.99}
)", calib);
  ir::Graph low = sim;
  passes::run_pipeline(low, {"lower_int8"});
  passes::run_pipeline(low, passes::default_pipeline());
  passes::run_pipeline(sim, passes::default_pipeline());
  EXPECT_GT(count(low, "QConv"), 0);
  runtime::Session ss(sim), sl(low);
  int same = 0;
  double max_diff = 0, max_logit = 0;
  for (size_t i = 0; i < 64; ++i) {
    const auto in = sample(i);
    const Tensor a = ss.run(in).at(out_name), b = sl.run(in).at(out_name);
    int64_t ta = 0, tb = 0;
    for (int64_t c = 0; c < a.numel(); ++c) {
      if (a.data<float>()[c] > a.data<float>()[ta]) ta = c;
      if (b.data<float>()[c] > b.data<float>()[tb]) tb = c;
      max_diff = std::max(max_diff, static_cast<double>(std::abs(a.data<float>()[c] - b.data<float>()[c])));
      max_logit = std::max(max_logit, static_cast<double>(std::abs(a.data<float>()[c])));
    }
    same += ta == tb;
  }
  EXPECT_GE(same, 61) << "top-1 agreement of the lowered graph with the simulation, of 64";
  EXPECT_LE(max_diff, 0.05 * max_logit) << "largest logit difference";
}

// channels_last on the lowered graph: every QConv runs N,H,W,C; the transposes left are the edges of the
// integer region (the input, before Flatten), and nothing computes differently.
TEST(ChannelsLast, KeepsActivationsNhwcBetweenIntegerConvs) {
  const ir::Graph sim = quantized(small_net(), kW8A8, random_inputs(4, 10));
  ir::Graph low = sim;
  passes::run_pipeline(low, {"lower_int8"});
  ir::Graph nhwc = low;
  const auto report = passes::run_pipeline(nhwc, {"channels_last"});
  const auto& info = report["passes"][0]["info"];
  EXPECT_EQ(info["convs_channels_last"].get<int>(), 3);
  int channels_last = 0;
  for (auto& n : nhwc.nodes) channels_last += n->op_type == "QConv" && n->attr_int("channels_last", 0) == 1;
  EXPECT_EQ(channels_last, 3);
  // The input and back to N,C,H,W before Flatten; Clip, the residual Add, Relu, QuantizeLinear
  // and the MaxPool of uint8 codes (joule's N,H,W,C pool) run on N,H,W,C tensors.
  EXPECT_EQ(count(nhwc, "Transpose"), 2);
  int nhwc_pools = 0;
  for (auto& n : nhwc.nodes) nhwc_pools += n->op_type == "MaxPool" && n->domain == "joule";
  EXPECT_EQ(nhwc_pools, 1);
  runtime::Session sl(low), sn(nhwc);
  for (auto& in : random_inputs(3, 70)) {
    const Tensor a = sl.run(in).at("y"), b = sn.run(in).at("y");
    ASSERT_EQ(a.shape(), b.shape());
    for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-5) << i;
  }
  // The reference kernels (no oneDNN) agree too.
  runtime::SessionOptions ref;
  ref.algo.add("reference");
  runtime::Session sr(nhwc, ref);
  for (auto& in : random_inputs(2, 80)) {
    const Tensor a = sl.run(in).at("y"), b = sr.run(in).at("y");
    for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-5) << i;
  }
}

// fuse_quantize on the integer plan: a squeeze-and-excitation gate's Mul (an N,H,W,C [N,1,1,C]
// gate after channels_last) and a residual Add whose outputs only a QuantizeLinear reads fold
// into it; the plan computes the same bytes as without the pass, on the fast kernels and the
// reference ones.
TEST(FuseQuantize, GateMulAndResidualAddFoldIntoTheQuantizeExactly) {
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 3, 12, 12})
      .init("w1", random_tensor({8, 3, 3, 3}, 1, -0.5f, 0.5f))
      .init("we", random_tensor({8, 8, 1, 1}, 2, -0.5f, 0.5f))
      .init("w2", random_tensor({8, 8, 1, 1}, 3, -0.5f, 0.5f))
      .init("w3", random_tensor({4, 8, 1, 1}, 4, -0.5f, 0.5f))
      .node("Conv", {"x", "w1"}, {"c1"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("GlobalAveragePool", {"c1"}, {"p"})
      .node("Conv", {"p", "we"}, {"e"})
      .node("Sigmoid", {"e"}, {"g"})
      .node("Mul", {"g", "c1"}, {"m"})  // the gate first: the pass takes the full operand as x
      .node("Conv", {"m", "w2"}, {"c2"})
      .node("Add", {"c2", "c1"}, {"s"})
      .node("Relu", {"s"}, {"r"})
      .node("Conv", {"r", "w3"}, {"y"})
      .output("y");
  const ir::Graph sim = quantized(b.build(), kW8A8, random_inputs(4, 40));
  std::vector<std::string> with = passes::int8_pipeline(passes::default_pipeline()), without = with;
  std::erase(without, std::string("fuse_quantize"));
  ASSERT_NE(with.size(), without.size());
  ir::Graph fused = sim, plain = sim;
  const auto report = passes::run_pipeline(fused, with);
  passes::run_pipeline(plain, without);
  int n_fused = -1;
  for (auto& p : report["passes"])
    if (p["pass"] == "fuse_quantize") n_fused = p["info"]["fused"].get<int>();
  EXPECT_EQ(n_fused, 2);
  EXPECT_EQ(count(fused, "Mul") + count(fused, "Add"), 0);
  EXPECT_EQ(count(plain, "Mul") + count(plain, "Add"), 2);
  for (const char* algo : {"guess", "reference"}) {
    runtime::SessionOptions o;
    o.algo.add(algo);
    runtime::Session a(fused, o), c(plain, o);
    for (auto& in : random_inputs(3, 90)) {
      const Tensor ya = a.run(in).at("y"), yc = c.run(in).at("y");
      ASSERT_EQ(ya.nbytes(), yc.nbytes());
      EXPECT_EQ(std::memcmp(ya.raw(), yc.raw(), ya.nbytes()), 0) << algo;
    }
  }
}
