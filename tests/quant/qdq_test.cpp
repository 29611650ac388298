// The quantization config, planning, calibration and QDQ insertion on small graphs built here:
// rule resolution, one-line errors, the inserted nodes, and the simulated output against the
// same arithmetic done by hand.
#include <gtest/gtest.h>

#include "test_tensors.h"

#include <cmath>
#include <filesystem>
#include <random>

#include <unistd.h>

#include "graph_builder.h"
#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/onnx/model_io.h"
#include "joule/passes/pass.h"
#include "joule/quant/qdq.h"
#include "joule/quant/sensitivity.h"

using namespace joule;
using namespace joule::quant;
using joule::testing::GraphBuilder;

namespace {

using joule::testing::random_tensor;

// x[1,2,6,6] -> Conv(3x3, 4 out) "/layer1/conv" -> Relu -> Conv(1x1) "/layer4.0/conv" -> Flatten [1,108] -> Gemm "fc"
ir::Graph small_cnn() {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 2, 6, 6})
      .init("w1", random_tensor({4, 2, 3, 3}, 1))
      .init("b1", random_tensor({4}, 2))
      .init("w2", random_tensor({3, 4, 1, 1}, 3))
      .init("wf", random_tensor({5, 108}, 4, -0.2f, 0.2f))
      .init("bf", random_tensor({5}, 5))
      .node("Conv", {"x", "w1", "b1"}, {"c1"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, "/layer1/conv")
      .node("Relu", {"c1"}, {"r1"}, {}, "/layer1/relu")
      .node("Conv", {"r1", "w2"}, {"c2"}, {}, "/layer4.0/conv")
      .node("Flatten", {"c2"}, {"f"}, {}, "flat")
      .node("Gemm", {"f", "wf", "bf"}, {"y"}, {{"transB", int64_t{1}}}, "fc")
      .output("y");
  ir::Graph g = b.build();
  prepare_for_quantization(g);
  return g;
}

const char* kIssueExample = R"(
default:
  weight: {format: int, bits: 8, symmetric: true, granularity: per_channel, calibrator: minmax}
  input:  {format: int, bits: 8, symmetric: false, granularity: per_tensor, calibrator: percentile, percentile: 99.99}
rules:
  - match: {type: Gemm}
    input: {format: int, bits: 8, calibrator: entropy}
  - match: {regex: "layer4\\..*"}
    weight: {format: fixed, width: 8, frac_width: 6}
)";

const NodeChoice& choice_of(const ir::Graph& g, const std::vector<NodeChoice>& cs, const std::string& name) {
  for (auto& c : cs)
    if (g.nodes[c.node]->name == name) return c;
  throw std::runtime_error("no choice for " + name);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

SampleFn samples_of(const std::vector<runtime::TensorMap>& v) {
  auto i = std::make_shared<size_t>(0);
  return [&v, i](runtime::TensorMap& in) {
    if (*i >= v.size()) return false;
    in = v[(*i)++];
    return true;
  };
}

std::vector<runtime::TensorMap> inputs(size_t n, uint32_t seed) {
  std::vector<runtime::TensorMap> v;
  for (size_t i = 0; i < n; ++i) v.push_back({{"x", random_tensor({1, 2, 6, 6}, seed + static_cast<uint32_t>(i), -2, 3)}});
  return v;
}

}  // namespace

TEST(QuantConfig, IssueExampleResolvesRulesInOrder) {
  ir::Graph g = small_cnn();
  auto cs = resolve(g, QuantConfig::parse(kIssueExample, "q.yaml"));
  ASSERT_EQ(cs.size(), 3u);  // two Convs and the Gemm; Relu/Flatten are not in `ops`
  const NodeChoice& c1 = choice_of(g, cs, "/layer1/conv");
  ASSERT_TRUE(c1.roles[int(Role::Weight)]);
  EXPECT_EQ(c1.roles[int(Role::Weight)]->format.kind, FormatKind::Int);
  EXPECT_EQ(c1.roles[int(Role::Weight)]->format.granularity, Granularity::PerChannel);
  EXPECT_EQ(c1.roles[int(Role::Input)]->calib.method, CalibMethod::Percentile);
  EXPECT_FALSE(c1.roles[int(Role::Input)]->format.symmetric);
  EXPECT_FALSE(c1.roles[int(Role::Bias)]);  // bias not configured: stays float
  const NodeChoice& c2 = choice_of(g, cs, "/layer4.0/conv");
  EXPECT_EQ(c2.roles[int(Role::Weight)]->format.kind, FormatKind::Fixed);
  EXPECT_EQ(c2.roles[int(Role::Weight)]->format.frac_bits, 6);
  EXPECT_EQ(c2.rules, std::vector<int>{1});
  const NodeChoice& fc = choice_of(g, cs, "fc");
  EXPECT_EQ(fc.roles[int(Role::Input)]->calib.method, CalibMethod::Entropy);
  EXPECT_FALSE(fc.roles[int(Role::Input)]->format.symmetric);  // inherited from default, field by field
  EXPECT_EQ(fc.roles[int(Role::Weight)]->format.axis, 0);      // Gemm transB=1: output channels on axis 0
}

TEST(QuantConfig, SkipRulesAndTypeRulesSelectNodes) {
  ir::Graph g = small_cnn();
  auto cs = resolve(g, QuantConfig::parse(R"(
default:
  input: {format: int8}
rules:
  - match: {name: fc}
    skip: true
  - match: {type: Relu}
    output: {format: fp16}
)",
                                          "q.yaml"));
  std::set<std::string> names;
  for (auto& c : cs) names.insert(g.nodes[c.node]->name);
  EXPECT_EQ(names, (std::set<std::string>{"/layer1/conv", "/layer1/relu", "/layer4.0/conv"}));
  EXPECT_EQ(choice_of(g, cs, "/layer1/relu").roles[int(Role::Output)]->format.kind, FormatKind::Float16);
}

// `feeds`: the nodes one of whose readers has a listed op type (the conv before the Relu, not
// the one before the Flatten); several types comma-separated; a typo'd key names the valid ones.
TEST(QuantConfig, FeedsMatchesNodesByTheirReaders) {
  ir::Graph g = small_cnn();
  auto names = [&](const std::string& feeds) {
    const std::string yaml = "ops: []\ndefault:\n  input: {format: int8}\nrules:\n  - match: {type: Conv, feeds: \"" +
                             feeds + "\"}\n    output: {format: int8}\n";
    std::set<std::string> r;
    for (auto& c : resolve(g, QuantConfig::parse(yaml, "q.yaml"))) r.insert(g.nodes[c.node]->name);
    return r;
  };
  EXPECT_EQ(names("Relu"), (std::set<std::string>{"/layer1/conv"}));
  EXPECT_EQ(names("Sigmoid, Flatten"), (std::set<std::string>{"/layer4.0/conv"}));
  EXPECT_EQ(names("Flatten,Relu"), (std::set<std::string>{"/layer1/conv", "/layer4.0/conv"}));
  const std::string e = error_of([&] {
    resolve(g, QuantConfig::parse("default:\n  input: {format: int8}\nrules:\n  - match: {feed: Relu}\n", "q.yaml"));
  });
  EXPECT_NE(e.find("unknown key 'feed' (type, name, regex, feeds)"), std::string::npos) << e;
}

TEST(QuantConfig, BadConfigsAreOneLineErrorsNamingWhere) {
  ir::Graph g = small_cnn();
  auto err = [&](const std::string& yaml) {
    return error_of([&] { resolve(g, QuantConfig::parse(yaml, "q.yaml")); });
  };
  EXPECT_NE(err("default:\n  weight: {format: int9000}\n").find("q.yaml"), std::string::npos);
  EXPECT_NE(err("default:\n  weight: {format: posit}\n").find("unknown format 'posit'"), std::string::npos);
  EXPECT_NE(err("default:\n  weight: {format: int, bits: 1}\n").find("bits"), std::string::npos);
  EXPECT_NE(err("default:\n  weight: {format: int, bitz: 8}\n").find("unknown key 'bitz'"), std::string::npos);
  EXPECT_NE(err("default:\n  weight: {format: int, calibrator: magic}\n").find("magic"), std::string::npos);
  EXPECT_NE(err("default:\n  weight: {format: int8}\nrules:\n  - match: {name: nope}\n    weight: {bits: 4}\n")
                .find("matches no node"),
            std::string::npos);
  EXPECT_NE(err("default:\n  weight: {format: int8}\nrules:\n  - match: {regex: \"(\"}\n").find("regex"),
            std::string::npos);
  EXPECT_NE(err("rules: []\n").find("'default' entry is required"), std::string::npos);
  EXPECT_NE(err("default: [1, 2\n").find("not valid YAML"), std::string::npos);
  for (const char* y : {"default:\n  weight: {format: int9000}\n", "default:\n  weight: {format: posit}\n"})
    EXPECT_EQ(err(y).find('\n'), std::string::npos);
}

TEST(QuantQdq, W8A8InsertsStandardQdqAndMatchesHandSimulation) {
  ir::Graph g = small_cnn();
  QuantPlan plan = plan_quantization(g, resolve(g, QuantConfig::parse(R"(
default:
  weight: {format: int, bits: 8, symmetric: true, granularity: per_channel}
  input:  {format: int, bits: 8, symmetric: false}
)",
                                                                     "q.yaml")));
  auto data = inputs(4, 10);
  EXPECT_EQ(calibrate(g, plan, samples_of(data), {}), 4u);
  ir::Graph q = insert_qdq(g, plan);
  int quantize = 0, dequantize = 0;
  for (auto& n : q.nodes) {
    quantize += n->op_type == "QuantizeLinear";
    dequantize += n->op_type == "DequantizeLinear";
  }
  EXPECT_EQ(quantize, 3);    // the three activation inputs
  EXPECT_EQ(dequantize, 6);  // and the three weights, stored as int8
  int int8_weights = 0;
  for (auto& [name, t] : q.initializers) int8_weights += t.dtype() == DType::Int8 && t.rank() >= 2;
  EXPECT_EQ(int8_weights, 3);
  EXPECT_TRUE(q.nodes.size() > g.nodes.size());
  EXPECT_TRUE(q.nodes[0]->meta["software"].is_object());

  // By hand: fake-quantize the input and the weights, run the FP32 graph on them.
  const QuantPoint* in_x = nullptr;
  for (auto& p : plan.points)
    if (p.tensor == "x") in_x = &p;
  ASSERT_TRUE(in_x);
  ASSERT_EQ(in_x->q.scale.size(), 1u);
  float lo = 1e9f, hi = -1e9f;
  for (auto& m : data)
    for (int64_t i = 0; i < 72; ++i) {
      lo = std::min(lo, m.at("x").data<float>()[i]);
      hi = std::max(hi, m.at("x").data<float>()[i]);
    }
  EXPECT_FLOAT_EQ(in_x->q.scale[0], (hi - lo) / 255.0f);  // min-max calibration, asymmetric uint8

  runtime::Session sq(q), sf(g);
  auto yq = sq.run(data[0]).at("y");
  auto yf = sf.run(data[0]).at("y");
  double err = 0, ref = 0;
  for (int64_t i = 0; i < yq.numel(); ++i) {
    err += std::pow(yq.data<float>()[i] - yf.data<float>()[i], 2);
    ref += std::pow(yf.data<float>()[i], 2);
  }
  EXPECT_GT(err, 0.0);                          // quantization changed something
  EXPECT_GT(10 * std::log10(ref / err), 20.0);  // but W8A8 stays close (> 20 dB)
}

// Computed tensors in formats ONNX cannot express get joule's FakeQuant; constant weights of
// fewer than 8 bits are standard int8 codes in their narrower range (4 bits: [-8, 7]).
TEST(QuantQdq, NonEightBitFormatsUseFakeQuantNodesExceptNarrowWeights) {
  ir::Graph g = small_cnn();
  QuantPlan plan = plan_quantization(g, resolve(g, QuantConfig::parse(R"(
default:
  weight: {format: int, bits: 4, granularity: per_channel}
  input:  {format: fixed, width: 8, frac_width: 4}
)",
                                                                     "q.yaml")));
  calibrate(g, plan, samples_of(inputs(2, 1)), {});
  ir::Graph q = insert_qdq(g, plan);
  int fq = 0, dq = 0;
  for (auto& n : q.nodes) {
    fq += n->op_type == "FakeQuant" && n->domain == "joule";
    if (n->op_type != "DequantizeLinear") continue;
    const Tensor& codes = q.initializers.at(n->inputs[0]);
    if (codes.dtype() != DType::Int8) continue;  // the int32 biases
    ++dq;
    for (int64_t i = 0; i < codes.numel(); ++i) {
      ASSERT_GE(codes.data<int8_t>()[i], -8);
      ASSERT_LE(codes.data<int8_t>()[i], 7);
    }
  }
  EXPECT_EQ(fq, 3);  // the three inputs
  EXPECT_EQ(dq, 3);  // the three weights
  EXPECT_EQ(q.opsets.at("joule"), 1);
  runtime::Session s(q);
  auto y = s.run(inputs(1, 3)[0]).at("y");
  EXPECT_EQ(y.shape(), (Shape{1, 5}));
}

TEST(QuantQdq, CalibrationCacheIsReusedAndCorruptFilesIgnored) {
  namespace fs = std::filesystem;
  const fs::path cache = fs::temp_directory_path() / ("joule_calib_" + std::to_string(::getpid()) + ".json");
  fs::remove(cache);
  ir::Graph g = small_cnn();
  auto cfg = QuantConfig::parse("default:\n  input: {format: int8, calibrator: percentile}\n", "q.yaml");
  CalibrationOptions o;
  o.cache_path = cache.string();
  o.data_label = "four random inputs";
  auto data = inputs(4, 10);
  QuantPlan p1 = plan_quantization(g, resolve(g, cfg));
  EXPECT_EQ(calibrate(g, p1, samples_of(data), o), 4u);
  ASSERT_TRUE(fs::exists(cache));
  QuantPlan p2 = plan_quantization(g, resolve(g, cfg));
  EXPECT_EQ(calibrate(g, p2, samples_of(data), o), 0u);  // everything from the cache
  for (size_t i = 0; i < p1.points.size(); ++i) EXPECT_EQ(p1.points[i].q.scale, p2.points[i].q.scale);
  // A different data label is a different key: calibrated again.
  o.data_label = "other";
  QuantPlan p3 = plan_quantization(g, resolve(g, cfg));
  EXPECT_EQ(calibrate(g, p3, samples_of(data), o), 4u);
  write_file_atomic(cache.string(), "{not json");
  QuantPlan p4 = plan_quantization(g, resolve(g, cfg));
  EXPECT_EQ(calibrate(g, p4, samples_of(data), o), 4u);  // reported and ignored
  fs::remove(cache);
}

TEST(QuantSensitivity, CumulativeMetricsMatchDirectComputation) {
  ir::Graph g = small_cnn();
  QuantPlan plan = plan_quantization(g, resolve(g, QuantConfig::parse(
                                                       "default:\n  weight: {format: int4, granularity: per_channel}\n"
                                                       "  input: {format: uint8}\n",
                                                       "q.yaml")));
  auto data = inputs(3, 20);
  calibrate(g, plan, samples_of(data), {});
  SensitivityOptions o;
  o.variants = {"all", "weights"};
  SensitivityReport r = sensitivity(g, plan, data, {}, o);
  ASSERT_EQ(r.layers.size(), 3u);
  // Direct: both graphs, the first conv's output, pooled SQNR over the three samples.
  runtime::Session sf(g), sq(insert_qdq(g, plan));
  struct Grab : runtime::Observer {
    std::vector<Tensor> got;
    void after_node(size_t, const ir::Node& n, const std::vector<const Tensor*>&, const std::vector<Tensor>& o) override {
      if (n.outputs[0] == "c1") got.push_back(o[0].clone());
    }
  } gf, gq;
  sf.add_observer(&gf);
  sq.add_observer(&gq);
  double s = 0, e = 0, mx = 0;
  for (auto& d : data) {
    sf.run(d);
    sq.run(d);
  }
  for (size_t k = 0; k < data.size(); ++k)
    for (int64_t i = 0; i < gf.got[k].numel(); ++i) {
      const double a = gf.got[k].data<float>()[i], b = gq.got[k].data<float>()[i];
      s += a * a;
      e += (a - b) * (a - b);
      mx = std::max(mx, std::abs(a - b));
    }
  const Metrics& m = r.layers[0].metrics.at("all");
  EXPECT_EQ(r.layers[0].tensor, "c1");
  EXPECT_NEAR(m.sqnr_db, 10 * std::log10(s / e), 1e-6);
  EXPECT_NEAR(m.max_abs, mx, 1e-6);
  EXPECT_EQ(m.samples, 3u);
  // Weight-only quantization at 4 bits hurts less than weights plus activations.
  EXPECT_GE(r.layers[2].metrics.at("weights").sqnr_db + 1e-9, r.layers[2].metrics.at("all").sqnr_db - 3.0);
  EXPECT_FALSE(r.csv().empty());
  EXPECT_NE(r.svg("t").find("<svg"), std::string::npos);
  EXPECT_NE(r.table().find("/layer1/conv"), std::string::npos);
}

TEST(QuantSensitivity, IsolatedModeComparesFinalOutputPerLayer) {
  ir::Graph g = small_cnn();
  QuantPlan plan = plan_quantization(g, resolve(g, QuantConfig::parse(
                                                       "default:\n  weight: {format: int, bits: 2}\n", "q.yaml")));
  calibrate(g, plan, samples_of(inputs(2, 1)), {});
  SensitivityOptions o;
  o.mode = SensitivityMode::Isolated;
  o.variants = {"weights", "activations"};
  SensitivityReport r = sensitivity(g, plan, inputs(2, 5), {1, 3}, o);
  for (auto& L : r.layers) {
    EXPECT_TRUE(L.metrics.count("weights")) << L.node;
    EXPECT_FALSE(L.metrics.count("activations")) << L.node;  // no activation is quantized by this config
    EXPECT_TRUE(std::isfinite(L.metrics.at("weights").sqnr_db));
    EXPECT_TRUE(L.accuracy.count("weights"));
  }
  ASSERT_TRUE(r.fp32_accuracy);
}

// The QDQ export round trip: the simulation graph written as ONNX and read back computes the
// same outputs, bit for bit (int8 weights, per-channel scales and the int32 bias survive).
TEST(QuantQdq, ExportedQdqModelReimportsWithIdenticalOutputs) {
  ir::Graph g = small_cnn();
  QuantPlan plan = plan_quantization(g, resolve(g, QuantConfig::parse(R"(
default:
  weight: {format: int, bits: 8, symmetric: true, granularity: per_channel}
  bias:   {format: int, bits: 32}
  input:  {format: int, bits: 8, symmetric: false}
)",
                                                                     "q.yaml")));
  auto data = inputs(4, 20);
  calibrate(g, plan, samples_of(data), {});
  ir::Graph q = insert_qdq(g, plan);
  int int32_biases = 0;
  for (auto& [name, t] : q.initializers) int32_biases += t.dtype() == DType::Int32;
  EXPECT_EQ(int32_biases, 2);  // the Conv's and the Gemm's
  const std::string path =
      (std::filesystem::temp_directory_path() / ("joule_qdq_roundtrip_" + std::to_string(::getpid()) + ".onnx")).string();
  onnx::save_model(q, path);
  ir::Graph back = onnx::load_model(path);
  std::filesystem::remove(path);
  runtime::Session a(q), b(back);
  for (auto& in : data) {
    const Tensor ya = a.run(in).at("y"), yb = b.run(in).at("y");
    ASSERT_EQ(ya.shape(), yb.shape());
    for (int64_t i = 0; i < ya.numel(); ++i) EXPECT_EQ(ya.data<float>()[i], yb.data<float>()[i]) << i;
  }
}

// LSTM weights quantized, the state not: W and R become int8 initializers behind a per-row
// DequantizeLinear (axis 1, the gate rows), the input X and the bias stay float; the quantized
// LSTM still runs on the fast recurrent kernel after the default passes, close to float.
TEST(QuantQdq, RecurrentLayersQuantizeTheirWeightsOnly) {
  const int64_t H = 8, I = 5, T = 6;
  GraphBuilder b;
  b.input("x", DType::Float32, {T, 1, I})
      .init("W", random_tensor({2, 4 * H, I}, 21, -0.4f, 0.4f))
      .init("R", random_tensor({2, 4 * H, H}, 22, -0.4f, 0.4f))
      .init("B", random_tensor({2, 8 * H}, 23, -0.1f, 0.1f))
      .node("LSTM", {"x", "W", "R", "B"}, {"y"}, {{"hidden_size", H}, {"direction", std::string("bidirectional")}}, "lstm")
      .output("y");
  ir::Graph g = b.build();
  const std::vector<NodeChoice> choices = resolve(g, QuantConfig::parse(R"(
default:
  weight: {format: int, bits: 8, symmetric: true, granularity: per_channel}
  input:  {format: int, bits: 8, symmetric: false}
  output: {format: int, bits: 8, symmetric: false}
)",
                                                                        "q.yaml"));
  ASSERT_EQ(choices.size(), 1u);
  EXPECT_TRUE(choices[0].roles[static_cast<int>(Role::Weight)].has_value());
  EXPECT_FALSE(choices[0].roles[static_cast<int>(Role::Input)].has_value());
  EXPECT_FALSE(choices[0].roles[static_cast<int>(Role::Output)].has_value());
  EXPECT_EQ(choices[0].roles[static_cast<int>(Role::Weight)]->format.axis, 1);
  QuantPlan plan = plan_quantization(g, choices);
  const runtime::TensorMap in = {{"x", random_tensor({T, 1, I}, 24)}};
  calibrate(g, plan, samples_of({in}), {});
  ir::Graph q = insert_qdq(g, plan);
  int dequantize = 0, quantize = 0;
  for (auto& n : q.nodes) {
    quantize += n->op_type == "QuantizeLinear";
    if (n->op_type == "DequantizeLinear") {
      ++dequantize;
      EXPECT_EQ(n->attr_int("axis", -1), 1);
    }
  }
  EXPECT_EQ(quantize, 0);
  EXPECT_EQ(dequantize, 2);
  EXPECT_EQ(q.initializers.at("B").dtype(), DType::Float32);
  passes::run_pipeline(q, passes::default_pipeline());
  runtime::Session sq(q), sf(g);
  bool fast = false;
  for (size_t i = 0; i < sq.num_steps(); ++i)
    if (sq.step_node(i).op_type == "LSTM") fast = sq.step_node(i).meta["software"]["algorithm"] == "gemm_fused";
  EXPECT_TRUE(fast) << "the dequantized weights are folded into constants";
  const Tensor yq = sq.run(in).at("y"), yf = sf.run(in).at("y");
  double err = 0, ref = 0;
  for (int64_t i = 0; i < yq.numel(); ++i) {
    err += std::pow(yq.data<float>()[i] - yf.data<float>()[i], 2);
    ref += std::pow(yf.data<float>()[i], 2);
  }
  EXPECT_GT(err, 0.0);
  EXPECT_GT(10 * std::log10(ref / err), 30.0);
}
