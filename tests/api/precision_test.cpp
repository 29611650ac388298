// --precision bf16 (api/precision.h): Conv and Gemm on bfloat16 kernels where the CPU has them, each layer's isolated SQNR against its float32 kernel on the same inputs, and the ladder
// keeping the layers below the threshold in float32.
#include <gtest/gtest.h>

#include <cmath>

#include "joule/api/prepare.h"
#include "joule/core/cpu_features.h"
#include "joule/quant/sensitivity.h"
#include "joule/runtime/inputs.h"
#include "graph_builder.h"

namespace api = joule::api;
using joule::Error;

namespace {

const std::string kModel = std::string(JOULE_SOURCE_DIR) + "/models/fashion_cnn.onnx";

api::PrepareOptions bf16(double min_sqnr_db) {
  api::PrepareOptions o = api::PrepareOptions::with_threads(1);
  o.precision = "bf16";
  o.bf16_min_sqnr_db = min_sqnr_db;
  return o;
}

// Steps on a bf16 algorithm (onednn_bf16, winograd_bf16, winograd_f2_bf16).
size_t steps_on_bf16(const joule::runtime::Session& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.num_steps(); ++i) {
    const std::string a = s.step_node(i).meta["software"].value("algorithm", "");
    n += a.size() > 5 && a.compare(a.size() - 5, 5, "_bf16") == 0;
  }
  return n;
}

TEST(Precision, UnknownPrecisionIsRefused) {
  api::PrepareOptions o;
  o.precision = "fp8";
  try {
    api::prepare(api::Model::load(kModel), o);
    FAIL() << "fp8 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("neither fp32 nor bf16"), std::string::npos) << e.what();
  }
}

TEST(Precision, Bf16LayersAreCheckedAgainstFloat32AndTheLadderKeepsLowOnesThere) {
  if (std::string why = joule::bf16_unsupported_reason(); !why.empty()) GTEST_SKIP() << why;
  const api::Model m = api::Model::load(kModel);
  api::Prepared p = api::prepare(m, bf16(30));
  const api::PrecisionReport& r = p.precision;
  ASSERT_GE(r.bf16_layers(), 2u) << r.to_json().dump();  // its convolutions and its classifier
  EXPECT_EQ(r.fp32_layers(), 0u);
  EXPECT_EQ(r.check_input, "seeded random");
  EXPECT_EQ(steps_on_bf16(*p.session), r.bf16_layers());
  for (const api::LayerPrecision& l : r.layers) {
    // bfloat16 products: close to float32 (8 significant bits: ~45-55 dB), but not equal to it.
    EXPECT_GT(l.sqnr_db, 30) << l.node;
    EXPECT_LT(l.sqnr_db, 90) << l.node << ": as exact as float32, so not computed in bfloat16";
  }

  // The whole model against float32: close, not equal.
  auto fp32 = api::prepare(m, api::PrepareOptions::with_threads(1));
  const joule::runtime::TensorMap in = joule::runtime::random_inputs(*fp32.session, 3);
  const auto want = fp32.session->run(in), got = p.session->run(in);
  joule::quant::MetricsAccumulator acc;
  for (auto& [name, t] : want) acc.add(t, got.at(name));
  EXPECT_GT(acc.result().sqnr_db, 30);
  EXPECT_LT(acc.result().sqnr_db, 90);

  // A threshold no bf16 layer reaches: every one stays float32, on its float32 twin or better.
  api::Prepared all = api::prepare(m, bf16(1000));
  EXPECT_EQ(all.precision.fp32_layers(), r.layers.size());
  EXPECT_EQ(all.precision.bf16_layers(), 0u);
  EXPECT_EQ(steps_on_bf16(*all.session), 0u);
  EXPECT_NE(all.precision.summary().find(r.layers[0].node), std::string::npos) << all.precision.summary();
  const auto exact = all.session->run(in);
  joule::quant::MetricsAccumulator e;
  for (auto& [name, t] : want) e.add(t, exact.at(name));
  EXPECT_GT(e.result().sqnr_db, 90);

  // No check: the same layers in bf16, their SQNR not measured.
  api::Prepared unchecked = api::prepare(m, bf16(0));
  EXPECT_EQ(unchecked.precision.bf16_layers(), r.bf16_layers());
  for (const api::LayerPrecision& l : unchecked.precision.layers) EXPECT_TRUE(std::isnan(l.sqnr_db)) << l.node;
  EXPECT_NE(unchecked.precision.summary().find("no SQNR check"), std::string::npos);
}

// With AMX tiles (and the OS granting them) oneDNN's bf16 convolution runs 3-5x the AVX512-BF16
// rate on dense layers, so `guess` ranks it ahead of joule's bf16 Winograd (which it chose for
// ResNet's 3x3 layers, 64 channels at 56x56, before the estimate knew AMX).
TEST(Precision, AmxPutsTheDenseConvolutionsOnOnednnBf16) {
  if (!joule::cpu_features().amx_bf16) GTEST_SKIP() << "no AMX-BF16 tiles usable here";
  const std::map<std::string, joule::ir::Attribute> pad = {{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  joule::testing::GraphBuilder b;
  b.input("x", joule::DType::Float32, {1, 64, 56, 56})
      .init("w1", joule::testing::iota_tensor({64, 64, 3, 3}, -0.5f, 1.0f / 36864))
      .init("w2", joule::testing::iota_tensor({64, 64, 3, 3}, 0.5f, -1.0f / 36864))
      .node("Conv", {"x", "w1"}, {"c1"}, pad)
      .node("Relu", {"c1"}, {"r1"})
      .node("Conv", {"r1", "w2"}, {"y"}, pad)
      .output("y");
  api::Prepared p = api::prepare(api::Model(b.build()), bf16(0));
  size_t convs = 0;
  for (size_t i = 0; i < p.session->num_steps(); ++i) {
    const joule::ir::Node& n = p.session->step_node(i);
    if (n.op_type != "Conv" && n.op_type != "FusedConv") continue;
    ++convs;
    EXPECT_EQ(n.meta["software"].value("algorithm", ""), "onednn_bf16") << n.name;
  }
  EXPECT_EQ(convs, 2u);
}

// The ladder's middle rung: a layer on winograd_bf16 (F(4x4)) below the threshold moves to
// winograd_f2_bf16 (F(2x2), whose rounding the output transform magnifies less), is checked
// again there, and stays bf16 when it passes.
TEST(Precision, Winograd4x4LayersBelowTheThresholdTryTwoByTwoBeforeFloat32) {
  if (!joule::cpu_features().avx512_bf16) GTEST_SKIP() << "winograd_bf16 needs AVX512-BF16";
  const api::Model m = api::Model::load(kModel);
  auto on_f4 = [](double min_sqnr_db) {
    api::PrepareOptions o = bf16(min_sqnr_db);
    o.algo.rules.push_back("conv=winograd_bf16,onednn_bf16");  // every 3x3 conv of the model on F(4x4)
    return o;
  };
  const api::Prepared all_f4 = api::prepare(m, on_f4(1));
  std::string worst;
  double lowest = 1e9;
  for (const api::LayerPrecision& l : all_f4.precision.layers)
    if (l.algorithm == "winograd_bf16" && l.sqnr_db < lowest) {
      lowest = l.sqnr_db;
      worst = l.node;
    }
  ASSERT_FALSE(worst.empty()) << all_f4.precision.to_json().dump();
  EXPECT_GT(lowest, 20);
  EXPECT_LT(lowest, 50) << "F(4x4) in bf16 as exact as F(2x2)?";

  // Just above the worst F(4x4) layer: it moves to F(2x2) and passes there.
  api::Prepared p = api::prepare(m, on_f4(lowest + 0.5));
  bool seen = false;
  for (const api::LayerPrecision& l : p.precision.layers)
    if (l.node == worst) {
      seen = true;
      EXPECT_EQ(l.algorithm, "winograd_f2_bf16");
      EXPECT_FALSE(l.fp32) << l.sqnr_db;
      EXPECT_GE(l.sqnr_db, lowest + 0.5);
    }
  EXPECT_TRUE(seen) << p.precision.to_json().dump();
  for (size_t i = 0; i < p.session->num_steps(); ++i)
    if (p.session->step_node(i).name == worst) {
      EXPECT_EQ(p.session->step_node(i).meta["software"].value("algorithm", ""), "winograd_f2_bf16");
    }
  // The report's rules rebuild that plan (profile and compare prepare again from them).
  joule::kernels::AlgoSpec rebuilt;
  api::keep_fp32(p.precision, rebuilt);
  bool pinned = false;
  for (const auto& [target, names] : rebuilt.rules)
    pinned = pinned || (target == worst && names == std::vector<std::string>{"winograd_f2_bf16"});
  EXPECT_TRUE(pinned);
  // A threshold no bf16 layer reaches: the F(2x2) rung is tried, then float32 Winograd.
  api::Prepared none = api::prepare(m, on_f4(1000));
  EXPECT_EQ(none.precision.bf16_layers(), 0u);
  for (size_t i = 0; i < none.session->num_steps(); ++i)
    if (none.session->step_node(i).name == worst) {
      EXPECT_EQ(none.session->step_node(i).meta["software"].value("algorithm", ""), "winograd_f2");
    }
}

}  // namespace
