// The oneDNN int8 algorithms of joule's QConv and QMatMul against their reference kernels on
// random shapes: groups, depthwise, strides, pads, dilations, batch 2, uint8/int8 inputs with
// zero points, per-tensor and per-channel weight scales, float / uint8 / int8 outputs with
// Relu / Clip / SiLU / HardSwish; the emulated algorithms (what --int8 simulated runs) alike.
// All compute one epilogue, so outputs must be identical (oneDNN's swish and hardswish post-ops
// within float rounding). The implementation oneDNN picks must be a JIT one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "joule/core/cpu_features.h"
#include "joule/ops/int_util.h"
#include "graph_builder.h"
#include "kernel_test_util.h"

using namespace joule;
using joule::testing::GraphBuilder;

namespace {

// Random codes of type t; int8 ones within [-wmax, wmax] (wmax 64: weights quantized to 7 bits).
Tensor codes(DType t, const Shape& s, uint32_t seed, int wmax = 127) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(t == DType::UInt8 ? 0 : wmax >= 127 ? -128 : -wmax, t == DType::UInt8 ? 255 : wmax);
  Tensor r(t, s);
  for (int64_t i = 0; i < r.numel(); ++i) {
    if (t == DType::UInt8) r.data<uint8_t>()[i] = static_cast<uint8_t>(d(rng));
    else r.data<int8_t>()[i] = static_cast<int8_t>(d(rng));
  }
  return r;
}

Tensor zero_point(DType t, int v) {
  return t == DType::UInt8 ? Tensor::scalar<uint8_t>(static_cast<uint8_t>(v)) : Tensor::scalar<int8_t>(static_cast<int8_t>(v));
}

struct Case {
  DType x_type;
  int x_zp;
  bool per_channel;
  DType y_type;  // Float32: float output
  std::string act;
};

const Case kCases[] = {{DType::UInt8, 128, true, DType::UInt8, "Relu"}, {DType::UInt8, 37, false, DType::Float32, ""},
                       {DType::Int8, -3, true, DType::Int8, "Clip"},    {DType::Int8, 0, true, DType::Float32, "Relu"},
                       {DType::UInt8, 0, true, DType::Int8, ""},        {DType::UInt8, 250, true, DType::UInt8, "Clip"},
                       {DType::UInt8, 120, true, DType::UInt8, "SiLU"}, {DType::Int8, 3, true, DType::Float32, "SiLU"},
                       {DType::UInt8, 128, false, DType::Int8, "HardSwish"}};

// Adds the quantization parameters (inputs 1..8) and the node; returns the builder.
void add_params(GraphBuilder& b, const Case& c, const Tensor& w, int64_t channels, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.5f, 1.5f);
  std::vector<float> ws(static_cast<size_t>(c.per_channel ? channels : 1)), bias(static_cast<size_t>(channels));
  for (auto& s : ws) s = 0.002f * u(rng);
  for (auto& v : bias) v = u(rng) - 1.f;
  b.init("xs", Tensor::scalar<float>(0.03f))
      .init("xzp", zero_point(c.x_type, c.x_zp))
      .init("w", w)
      .init("ws", c.per_channel ? Tensor::from_vector(ws, {channels}) : Tensor::scalar<float>(ws[0]))
      .init("bias", Tensor::from_vector(bias, {channels}))
      .init("ys", Tensor::scalar<float>(0.05f))
      .init("yzp", zero_point(c.y_type == DType::Float32 ? DType::UInt8 : c.y_type, c.y_type == DType::Int8 ? -4 : 9));
}

std::map<std::string, ir::Attribute> act_attrs(const std::string& act) {
  std::map<std::string, ir::Attribute> a;
  a["activation"] = act;
  a["activation_params"] = act == "Clip" ? std::vector<float>{-0.5f, 3.f} : std::vector<float>{};  // SiLU, HardSwish: none
  return a;
}

// Both fast algorithms against the reference kernel: the oneDNN int8 kernel and the emulated
// one (the integer arithmetic on float32, what --int8 simulated runs) follow one epilogue
// (ops::qint::Requant), so every code and every float output must be identical.
// wmax: the largest |weight code|. Without VNNI the oneDNN kernel must refuse 8-bit weights
// (its sums would saturate) and run exactly with 7-bit ones on uint8 inputs.
void compare(const ir::Graph& g, const runtime::TensorMap& in, const std::string& cls, const Case& c, int wmax) {
  runtime::SessionOptions r;
  r.algo.add("reference");
  const Tensor want = runtime::Session(g, r).run(in).at("y");
  for (const char* name : {"onednn_int8", "emulated"}) {
    // oneDNN's swish / hardswish post-ops compute their exp and divisions their own way: within
    // float rounding there (and one code on rare ties); everything else is bit-exact. oneDNN has
    // no int8 kernel for a few grouped shapes with them (the algorithm says so; guess then
    // takes another).
    const bool approx = std::string(name) == "onednn_int8" && (c.act == "SiLU" || c.act == "HardSwish");
    runtime::SessionOptions o;
    o.algo.add(cls + "=" + name);
    std::unique_ptr<runtime::Session> session;
    try {
      session = std::make_unique<runtime::Session>(g, o);
    } catch (const std::exception& e) {
      // Without VNNI the oneDNN kernel refuses 8-bit weights (its sums would saturate): the
      // reason is named.
      if (std::string(name) == "onednn_int8" && !cpu_features().int8_dot && (wmax > 64 || c.x_type != DType::UInt8)) {
        EXPECT_NE(std::string(e.what()).find("no VNNI"), std::string::npos) << e.what();
        continue;
      }
      ASSERT_TRUE(approx && std::string(e.what()).find("oneDNN has no int8 kernel") != std::string::npos) << e.what();
      continue;
    }
    runtime::Session& fast = *session;
    std::string algo, detail;
    for (size_t i = 0; i < fast.num_steps(); ++i)
      if (fast.step_node(i).name == "q") {
        algo = fast.step_node(i).meta["software"].value("algorithm", "");
        detail = fast.step_node(i).meta["software"].value("algorithm_detail", "");
      }
    ASSERT_EQ(algo, name);
    EXPECT_EQ(detail.find("ref"), std::string::npos) << detail;
    std::printf("[impl] %s: %s\n", name, detail.c_str());
    const Tensor got = fast.run(in).at("y");
    ASSERT_EQ(got.dtype(), want.dtype());
    ASSERT_EQ(got.shape(), want.shape());
    int64_t off = 0;
    float worst = 0.f;
    for (int64_t i = 0; i < want.numel(); ++i) {
      if (c.y_type == DType::Float32) {
        const float a = got.data<float>()[i], b = want.data<float>()[i];
        if (approx) {
          ASSERT_NEAR(a, b, 1e-5f * (1.f + std::fabs(b))) << i;
        }
        off += a != b;
        worst = std::max(worst, std::fabs(a - b) / (1.f + std::fabs(b)));
      } else {
        const int64_t a = got.value_as_int(i), b = want.value_as_int(i);
        if (approx) {
          ASSERT_LE(std::abs(a - b), 1) << i;
        }
        off += a != b;
      }
    }
    // oneDNN's AMX matmul (brg:avx512_core_amx_int8) scales a per-tensor weight's float output in
    // another order than its VNNI kernels: its floats differ in the last bits from the epilogue's
    // (the exact integer sums are the same; codes, which round those floats, are checked exactly).
    const bool amx_float = c.y_type == DType::Float32 && detail.find("amx") != std::string::npos;
    if (amx_float) {
      EXPECT_LT(worst, 4e-7f) << name << " " << detail << ": " << off << " of " << want.numel() << " differ";
    } else if (!approx) {
      EXPECT_EQ(off, 0) << name << " " << detail << ": " << off << " of " << want.numel() << " differ";
    } else if (c.y_type != DType::Float32) {
      EXPECT_LE(off, want.numel() / 100 + 1) << detail;
    }
  }
}

struct ConvGeo {
  int64_t n, c, h, w, m, k, stride, pad, dil, group;
};

const ConvGeo kConvGeos[] = {{1, 16, 14, 14, 32, 3, 1, 1, 1, 1}, {2, 8, 9, 11, 16, 3, 2, 1, 1, 1},
                             {1, 32, 10, 10, 32, 3, 1, 1, 1, 32}, {1, 24, 9, 9, 24, 3, 2, 1, 1, 24},
                             {2, 16, 8, 8, 32, 3, 1, 2, 2, 4},   {1, 64, 7, 7, 16, 1, 1, 0, 1, 1},
                             {1, 3, 16, 16, 8, 5, 2, 2, 1, 1},   {1, 12, 6, 6, 6, 1, 1, 1, 1, 1},
                             // large enough for oneDNN's AMX kernels to be kept where the CPU has them
                             {1, 64, 8, 8, 64, 3, 1, 1, 1, 1},   {1, 256, 7, 7, 64, 1, 1, 0, 1, 1}};

// Adds the joule node "q" (`op`: QConv / QMatMul, the case's inputs, `attrs`) to `b`; the graph.
ir::Graph finish_graph(GraphBuilder& b, const char* op, const Case& c, const std::map<std::string, ir::Attribute>& attrs) {
  std::vector<std::string> ins = {"x", "xs", "xzp", "w", "ws", "", "bias"};
  if (c.y_type != DType::Float32) ins.insert(ins.end(), {"ys", "yzp"});
  b.node(op, ins, {"y"}, attrs, "q").output("y");
  ir::Graph g = b.build();
  g.nodes.back()->domain = "joule";
  g.opsets["joule"] = 1;
  return g;
}

// One QMatMul node "q": A codes `as`, weights [as.back(), N] within +-wmax, the case's epilogue.
ir::Graph qmatmul_graph(const Case& c, const Shape& as, int64_t N, uint32_t seed, int wmax) {
  GraphBuilder b;
  b.input("x", c.x_type, as);
  add_params(b, c, codes(DType::Int8, {as.back(), N}, seed, wmax), N, seed + 1);
  return finish_graph(b, "QMatMul", c, act_attrs(c.act));
}

}  // namespace

// wmax 127: 8-bit weights; 64: 7-bit weights (what oneDNN computes exactly without VNNI).
TEST(Int8Kernels, QConvOnednnAndEmulatedMatchReference) {
  uint32_t seed = 1;
  for (int wmax : {127, 64})
  for (const ConvGeo& geo : kConvGeos)
    for (const Case& c : kCases) {
      SCOPED_TRACE(::testing::Message() << "wmax" << wmax << " c" << geo.c << " m" << geo.m << " k" << geo.k << " s"
                                        << geo.stride << " p" << geo.pad << " d" << geo.dil << " g" << geo.group << " x"
                                        << dtype_name(c.x_type) << " zp" << c.x_zp << " y" << dtype_name(c.y_type) << " "
                                        << c.act);
      GraphBuilder b;
      b.input("x", c.x_type, {geo.n, geo.c, geo.h, geo.w});
      add_params(b, c, codes(DType::Int8, {geo.m, geo.c / geo.group, geo.k, geo.k}, seed, wmax), geo.m, seed + 1);
      seed += 2;
      auto attrs = act_attrs(c.act);
      attrs["kernel_shape"] = std::vector<int64_t>{geo.k, geo.k};
      attrs["strides"] = std::vector<int64_t>{geo.stride, geo.stride};
      attrs["pads"] = std::vector<int64_t>{geo.pad, geo.pad, geo.pad, geo.pad};
      attrs["dilations"] = std::vector<int64_t>{geo.dil, geo.dil};
      attrs["group"] = geo.group;
      const ir::Graph g = finish_graph(b, "QConv", c, attrs);
      compare(g, {{"x", codes(c.x_type, {geo.n, geo.c, geo.h, geo.w}, seed++)}}, "qconv", c, wmax);
    }
}

// oneDNN's AMX int8 kernels are taken only where they pay (qconv_onednn.cpp's amx_pays): kept on
// a ResNet-style 3x3 layer, skipped on an inverted bottleneck's narrow 1x1 expansion, where the
// older AMX kernel oneDNN picks first takes about twice the AVX512-VNNI kernel's time.
TEST(Int8Kernels, AmxKernelsOnlyWhereTheyPay) {
  if (!cpu_features().amx_bf16) GTEST_SKIP() << "no AMX tiles usable here";
  auto impl = [](const ConvGeo& geo) {
    const Case c{DType::UInt8, 3, true, DType::UInt8, "SiLU"};
    GraphBuilder b;
    b.input("x", c.x_type, {geo.n, geo.c, geo.h, geo.w});
    add_params(b, c, codes(DType::Int8, {geo.m, geo.c, geo.k, geo.k}, 7), geo.m, 8);
    auto attrs = act_attrs(c.act);
    attrs["kernel_shape"] = std::vector<int64_t>{geo.k, geo.k};
    attrs["pads"] = std::vector<int64_t>{geo.pad, geo.pad, geo.pad, geo.pad};
    runtime::SessionOptions o;
    o.algo.add("qconv=onednn_int8");
    runtime::Session s(finish_graph(b, "QConv", c, attrs), o);
    for (size_t i = 0; i < s.num_steps(); ++i)
      if (s.step_node(i).name == "q") return s.step_node(i).meta["software"].value("algorithm_detail", "");
    return std::string();
  };
  const std::string dense = impl({1, 64, 56, 56, 64, 3, 1, 1, 1, 1}), narrow = impl({1, 16, 112, 112, 96, 1, 1, 0, 1, 1});
  EXPECT_NE(dense.find("amx"), std::string::npos) << dense;
  EXPECT_EQ(narrow.find("amx"), std::string::npos) << narrow;
  EXPECT_FALSE(narrow.empty());
}

// The emulated kernel on N,H,W,C depthwise codes against the reference kernel: every code and
// float identical (the int8 epilogue over channel-last rows, exact sums), SiLU and HardSwish
// included. Channels below, at and past the 16-lane blocks (the masked tail), kernels 3 and 5,
// strides, dilation, asymmetric pads, batch 2.
TEST(Int8Kernels, EmulatedDepthwiseNhwcMatchesReference) {
  struct Geo {
    int64_t n, c, h, w, k, stride, dil;
    std::vector<int64_t> pads;  // top, left, bottom, right
  };
  const Geo geos[] = {{1, 16, 9, 9, 3, 1, 1, {1, 1, 1, 1}},    {2, 24, 8, 11, 3, 2, 1, {1, 1, 1, 1}},
                      {1, 72, 7, 7, 5, 1, 1, {2, 2, 2, 2}},    {1, 144, 6, 9, 3, 2, 1, {0, 0, 1, 1}},
                      {1, 7, 10, 6, 3, 1, 2, {2, 2, 2, 2}},    {1, 80, 5, 5, 3, 1, 1, {1, 0, 2, 1}},
                      {1, 33, 4, 13, 5, 2, 1, {2, 2, 2, 2}},   {1, 64, 1, 1, 3, 1, 1, {1, 1, 1, 1}}};
  uint32_t seed = 500;
  for (const Geo& geo : geos)
    for (const Case& c : kCases) {
      SCOPED_TRACE(::testing::Message() << "n" << geo.n << " c" << geo.c << " " << geo.h << "x" << geo.w << " k" << geo.k
                                        << " s" << geo.stride << " d" << geo.dil << " x" << dtype_name(c.x_type) << " zp"
                                        << c.x_zp << " y" << dtype_name(c.y_type) << " " << c.act);
      GraphBuilder b;
      const Shape xs = {geo.n, geo.h, geo.w, geo.c};
      b.input("x", c.x_type, xs);
      add_params(b, c, codes(DType::Int8, {geo.c, 1, geo.k, geo.k}, seed), geo.c, seed + 1);
      seed += 2;
      auto attrs = act_attrs(c.act);
      attrs["kernel_shape"] = std::vector<int64_t>{geo.k, geo.k};
      attrs["strides"] = std::vector<int64_t>{geo.stride, geo.stride};
      attrs["pads"] = std::vector<int64_t>{geo.pads[0], geo.pads[1], geo.pads[2], geo.pads[3]};
      attrs["dilations"] = std::vector<int64_t>{geo.dil, geo.dil};
      attrs["group"] = geo.c;
      attrs["channels_last"] = int64_t{1};
      const ir::Graph g = finish_graph(b, "QConv", c, attrs);
      const runtime::TensorMap in = {{"x", codes(c.x_type, xs, seed++)}};
      runtime::SessionOptions r;
      r.algo.add("reference");
      const Tensor want = runtime::Session(g, r).run(in).at("y");
      for (const char* name : {"emulated"}) {
        runtime::SessionOptions o;
        o.algo.add(std::string("qconv=") + name);
        runtime::Session fast(g, o);
        ASSERT_EQ(fast.step_node(fast.num_steps() - 1).meta["software"].value("algorithm", ""), name);
        const Tensor got = fast.run(in).at("y");
        ASSERT_EQ(got.dtype(), want.dtype());
        ASSERT_EQ(got.shape(), want.shape());
        int64_t off = 0;
        for (int64_t i = 0; i < want.numel(); ++i)
          off += got.dtype() == DType::Float32 ? got.data<float>()[i] != want.data<float>()[i]
                                               : got.value_as_int(i) != want.value_as_int(i);
        EXPECT_EQ(off, 0) << name << ": " << off << " of " << want.numel() << " differ";
      }
    }
}

// The integer plan's SiLU (ops::qint::silu) against float64 over its range: relative error below
// 4e-7 where v >= -80, below 2e-33 in magnitude under it; NaN stays NaN.
TEST(Int8Kernels, IntegerPlanSiluIsAccurate) {
  double worst = 0;
  for (float v = -90.f; v <= 90.f; v += 0.0037f) {
    const double want = v / (1.0 + std::exp(-static_cast<double>(v)));
    const float got = ops::qint::silu(v);
    if (v >= -80.f) {
      if (want != 0) worst = std::max(worst, std::fabs(got - want) / std::fabs(want));
    } else {
      EXPECT_LT(std::fabs(got), 2e-33f) << v;
    }
  }
  EXPECT_LT(worst, 4e-7) << worst;
  EXPECT_TRUE(std::isnan(ops::qint::silu(std::nanf(""))));
  EXPECT_EQ(ops::qint::silu(0.f), 0.f);
}

TEST(Int8Kernels, QMatMulOnednnAndEmulatedMatchReference) {
  uint32_t seed = 100;
  const std::vector<std::pair<Shape, int64_t>> shapes = {{{2, 3, 64}, 10}, {{1, 512}, 10}, {{7, 33}, 17}, {{4, 16, 128}, 64}};
  for (int wmax : {127, 64})
  for (auto& [as, N] : shapes)
    for (const Case& c : kCases) {
      SCOPED_TRACE(::testing::Message() << "wmax" << wmax << " " << shape_str(as) << " N" << N << " x"
                                        << dtype_name(c.x_type) << " zp" << c.x_zp << " y" << dtype_name(c.y_type) << " "
                                        << c.act);
      const ir::Graph g = qmatmul_graph(c, as, N, seed, wmax);
      seed += 2;
      compare(g, {{"x", codes(c.x_type, as, seed++)}}, "qmatmul", c, wmax);
    }
}

// The worst case of u8 x s8 products added in pairs (oneDNN's kernels without VNNI add them in
// saturating 16-bit lanes): every input code 255 and every weight +64 or -64, so each pair is
// +-32640, one step below saturation. oneDNN must run it (on any CPU) and agree exactly.
TEST(Int8Kernels, SevenBitWeightsAtTheExtremesAreExactOnOnednn) {
  for (int64_t k : {1, 3}) {
    const int64_t C = 64, M = 16, H = 6;
    Tensor w(DType::Int8, {M, C, k, k});
    for (int64_t i = 0; i < w.numel(); ++i) w.data<int8_t>()[i] = (i / (C * k * k)) % 2 ? -64 : 64;
    Tensor x(DType::UInt8, {1, C, H, H});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<uint8_t>()[i] = 255;
    const Case c{DType::UInt8, 0, true, DType::Float32, ""};
    GraphBuilder b;
    b.input("x", DType::UInt8, {1, C, H, H});
    add_params(b, c, w, M, 7);
    auto attrs = act_attrs("");
    attrs["kernel_shape"] = std::vector<int64_t>{k, k};
    attrs["pads"] = std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2};
    b.node("QConv", {"x", "xs", "xzp", "w", "ws", "", "bias"}, {"y"}, attrs, "q").output("y");
    ir::Graph g = b.build();
    g.nodes.back()->domain = "joule";
    g.opsets["joule"] = 1;
    runtime::SessionOptions r, o;
    r.algo.add("reference");
    o.algo.add("qconv=onednn_int8");
    const Tensor want = runtime::Session(g, r).run({{"x", x}}).at("y");
    const Tensor got = runtime::Session(g, o).run({{"x", x}}).at("y");
    for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(got.data<float>()[i], want.data<float>()[i]) << "k" << k << " at " << i;
  }
}

namespace {

// One node with 7-bit weights through `algo` against the reference kernel: identical outputs.
void expect_avx2_int8_exact(const ir::Graph& g, const runtime::TensorMap& in, const std::string& cls) {
  runtime::SessionOptions r, o;
  r.algo.add("reference");
  o.algo.add(cls + "=avx2_int8");
  const Tensor want = runtime::Session(g, r).run(in).at("y");
  runtime::Session fast(g, o);
  ASSERT_EQ(fast.step_node(fast.num_steps() - 1).meta["software"].value("algorithm", ""), "avx2_int8");
  const Tensor got = fast.run(in).at("y");
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  int64_t off = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    off += got.dtype() == DType::Float32 ? got.data<float>()[i] != want.data<float>()[i] : got.value_as_int(i) != want.value_as_int(i);
  EXPECT_EQ(off, 0) << off << " of " << want.numel() << " differ";
}

}  // namespace

// joule's AVX2 integer product (CPUs without VNNI): uint8 inputs, 7-bit weights, every epilogue;
// rows 1 to 300 (tiles of 64 x 128, register tiles of 4), K not a multiple of 4, N not of 16.
// (A 1x1 N,H,W,C convolution on it was 1.3-3.6x slower than oneDNN's int8 kernels and was left out.)
TEST(Int8Kernels, Avx2Int8MatchesReference) {
  if (!avx2_fma_missing_reason().empty()) GTEST_SKIP() << avx2_fma_missing_reason();
  uint32_t seed = 500;
  const std::vector<std::pair<Shape, int64_t>> shapes = {{{1, 1024}, 1000}, {{1, 7}, 3},       {{3, 37}, 17},
                                                         {{2, 150, 66}, 129}, {{300, 130}, 40}, {{5, 768}, 256}};
  for (auto& [as, N] : shapes)
    for (const Case& c : kCases) {
      if (c.x_type != DType::UInt8) continue;
      SCOPED_TRACE(::testing::Message() << shape_str(as) << " N" << N << " zp" << c.x_zp << " y" << dtype_name(c.y_type)
                                        << " " << c.act);
      const ir::Graph g = qmatmul_graph(c, as, N, seed, 64);
      seed += 2;
      expect_avx2_int8_exact(g, {{"x", codes(c.x_type, as, seed++)}}, "qmatmul");
    }
}

// 8-bit weights would saturate vpmaddubsw's pairs: the kernel refuses them and says why.
TEST(Int8Kernels, Avx2Int8RefusesEightBitWeights) {
  GraphBuilder b;
  const Case c{DType::UInt8, 3, true, DType::UInt8, ""};
  b.input("x", DType::UInt8, {2, 64});
  Tensor w = codes(DType::Int8, {64, 8}, 9, 64);
  w.data<int8_t>()[5] = -100;
  add_params(b, c, w, 8, 10);
  b.node("QMatMul", {"x", "xs", "xzp", "w", "ws", "", "bias", "ys", "yzp"}, {"y"}, act_attrs(""), "q").output("y");
  ir::Graph g = b.build();
  g.nodes.back()->domain = "joule";
  g.opsets["joule"] = 1;
  runtime::SessionOptions o;
  o.algo.add("qmatmul=avx2_int8");
  try {
    runtime::Session s(g, o);
    FAIL() << "avx2_int8 accepted a weight code of -100";
  } catch (const std::exception& e) {
    const std::string m = e.what();
    EXPECT_TRUE(m.find("weight codes reach 100") != std::string::npos || m.find("AVX2") != std::string::npos) << m;
  }
}
