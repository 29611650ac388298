// Every convolution algorithm against the reference kernel on random shapes and values:
// channels, kernel sizes, strides, pads (asymmetric), dilations, groups (incl. depthwise),
// 1-D convs, batch, threads, and FusedConv epilogues (bias, residual, Relu/LeakyRelu/Clip/Sigmoid/SiLU/HardSwish).
#include <fmt/core.h>

#include <cmath>
#include <limits>
#include <map>

#include "graph_builder.h"
#include "joule/core/cpu_features.h"
#include "joule/kernels/algorithm.h"
#include "joule/core/error.h"
#include "joule/ops/conv_util.h"
#include "joule/ops/movement_util.h"
#include "kernel_test_util.h"

namespace joule {
namespace {

using testing::GraphBuilder;
using Ints = std::vector<int64_t>;

struct ConvCase {
  int64_t n, c, h, w, m, group, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
  bool bias, residual, one_d;
  std::string act;
  int threads;
  int64_t oh() const { return (h + pt + pb - ((kh - 1) * dh + 1)) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - ((kw - 1) * dw + 1)) / sw + 1; }
};

ConvCase random_case(std::mt19937& rng) {
  auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  ConvCase k{};
  for (;;) {
    const int g = static_cast<int>(r(0, 9));
    k.group = g < 6 ? 1 : g < 8 ? 2 : -1;  // -1: depthwise
    const int64_t cg = r(1, 24), mg = r(1, 24);
    if (k.group == -1) {
      k.c = k.m = k.group = r(1, 40);
    } else {
      k.c = cg * k.group;
      k.m = mg * k.group;
    }
    k.n = r(1, 2);
    k.one_d = r(0, 7) == 0;
    k.kh = k.one_d ? 1 : r(1, 5);
    k.kw = r(1, 5);
    if (r(0, 2) == 0) k.kh = k.kw = 3;  // the common case, and Winograd's
    k.sh = k.one_d ? 1 : r(1, 2);
    k.sw = r(1, 2);
    if (r(0, 1)) k.sh = k.sw = 1;
    k.dh = k.one_d ? 1 : (r(0, 4) == 0 ? 2 : 1);
    k.dw = r(0, 4) == 0 ? 2 : 1;
    k.h = k.one_d ? 1 : r(1, 20);
    k.w = r(1, 20);
    k.pt = k.one_d ? 0 : r(0, 2);
    k.pb = k.one_d ? 0 : r(0, 2);
    k.pl = r(0, 2);
    k.pr = r(0, 2);
    if (k.h + k.pt + k.pb < (k.kh - 1) * k.dh + 1 || k.w + k.pl + k.pr < (k.kw - 1) * k.dw + 1) continue;
    k.bias = r(0, 3) != 0;
    k.residual = r(0, 3) == 0;
    const char* acts[] = {"", "", "Relu", "LeakyRelu", "Clip", "Sigmoid", "SiLU", "HardSwish"};
    k.act = acts[r(0, 7)];
    k.threads = static_cast<int>(r(1, 2));
    return k;
  }
}

ir::Graph build(const ConvCase& k, uint32_t seed) {
  GraphBuilder b;
  const Shape xs = k.one_d ? Shape{k.n, k.c, k.w} : Shape{k.n, k.c, k.h, k.w};
  const Shape ws = k.one_d ? Shape{k.m, k.c / k.group, k.kw} : Shape{k.m, k.c / k.group, k.kh, k.kw};
  const Shape ys = k.one_d ? Shape{k.n, k.m, k.ow()} : Shape{k.n, k.m, k.oh(), k.ow()};
  b.input("x", DType::Float32, xs);
  const float scale = 1.f / std::sqrt(static_cast<float>(k.c / k.group * k.kh * k.kw));
  b.init("w", testing::random_tensor(ws, seed, -scale, scale));
  std::vector<std::string> ins = {"x", "w", k.bias ? "b" : ""};
  if (k.bias) b.init("b", testing::random_tensor({k.m}, seed + 1));
  if (k.residual) {
    b.input("z", DType::Float32, ys);
    ins.push_back("z");
  }
  std::map<std::string, ir::Attribute> attrs = {{"group", k.group}};
  if (k.one_d) {
    attrs["strides"] = Ints{k.sw};
    attrs["dilations"] = Ints{k.dw};
    attrs["pads"] = Ints{k.pl, k.pr};
  } else {
    attrs["strides"] = Ints{k.sh, k.sw};
    attrs["dilations"] = Ints{k.dh, k.dw};
    attrs["pads"] = Ints{k.pt, k.pl, k.pb, k.pr};
  }
  const bool fused = k.residual || !k.act.empty();
  if (fused) {
    attrs["activation"] = k.act;
    if (k.act == "LeakyRelu") attrs["activation_params"] = std::vector<float>{0.1f};
    if (k.act == "Clip") attrs["activation_params"] = std::vector<float>{-0.5f, 0.7f};
    if (k.act.empty()) attrs["activation_params"] = std::vector<float>{};
  }
  b.node(fused ? "FusedConv" : "Conv", ins, {"y"}, attrs, "conv").output("y");
  ir::Graph g = b.build();
  if (fused) {
    g.nodes.back()->domain = "joule";
    g.opsets["joule"] = 1;
  }
  return g;
}

std::string describe(const ConvCase& k) {
  return fmt::format("N{} C{} {}x{} -> M{} g{} k{}x{} s{}x{} d{}x{} p{},{},{},{} bias{} res{} act'{}' t{}{}", k.n, k.c,
                     k.h, k.w, k.m, k.group, k.kh, k.kw, k.sh, k.sw, k.dh, k.dw, k.pt, k.pl, k.pb, k.pr, k.bias,
                     k.residual, k.act, k.threads, k.one_d ? " 1-D" : "");
}

// bfloat16 operands keep 8 significant bits (relative rounding 2^-9): the largest error of a
// sum of such products stays well under 1.5 % of the output's largest value, while a wrong
// layout, weight or epilogue errs by its whole size. Winograd F(4x4) in bf16 rounds the
// transformed operands, and its output transform (coefficients up to 8 x 8) adds the rounding
// errors of 36 points: up to ~9 % of the largest output on these small random cases, so its
// check is the SQNR as well (min_sqnr_db).
double tolerance(const std::string& algo) {
  if (algo == "onednn_bf16" || algo == "winograd_f2_bf16") return 1.5e-2;
  if (algo == "winograd_bf16") return 0.15;
  return algo.rfind("winograd", 0) == 0 || algo == "fft" ? 1e-3 : 1e-4;
}

// Output SQNR against the reference an algorithm must reach (bf16 algorithms; the others are
// held to tolerance(), far tighter).
double min_sqnr_db(const std::string& algo) {
  if (algo == "winograd_bf16") return 30;
  return algo.size() > 5 && algo.compare(algo.size() - 5, 5, "_bf16") == 0 ? 40 : 0;
}

TEST(ConvAlgorithms, MatchReferenceOnRandomShapes) {
  std::mt19937 rng(2026);
  std::map<std::string, int> ran;
  const auto algos = kernels::algorithms_for("conv");
  ASSERT_FALSE(algos.empty());
  for (int i = 0; i < 240; ++i) {
    const ConvCase k = random_case(rng);
    const ir::Graph g = build(k, static_cast<uint32_t>(i));
    runtime::TensorMap in = {{"x", testing::random_tensor(g.type_of("x")->static_shape(), 7u * i)}};
    if (k.residual) in["z"] = testing::random_tensor(g.type_of("z")->static_shape(), 7u * i + 1);
    const auto want = testing::run_with_algo(g, in, {"reference"}, "conv", k.threads);
    ASSERT_EQ(want.algorithm, "reference");
    for (const kernels::Algorithm* a : algos) {
      // A preference list with the reference last: the algorithm runs when it supports the node.
      const auto got = testing::run_with_algo(g, in, {std::string("conv=") + a->name + ",reference"}, "conv", k.threads);
      if (got.algorithm != a->name) continue;
      ++ran[a->name];
      EXPECT_LE(testing::rel_error(got.out.at("y"), want.out.at("y")), tolerance(a->name))
          << a->name << " on " << describe(k);
      EXPECT_GE(testing::sqnr_db(got.out.at("y"), want.out.at("y")), min_sqnr_db(a->name))
          << a->name << " on " << describe(k);
    }
  }
  for (const kernels::Algorithm* a : algos) {
    SCOPED_TRACE(a->name);
    // joule's own AVX-512 kernels refuse every node on a CPU without it (they say so);
    // Winograd has an AVX2 build as well.
    const std::string name = a->name;
    const bool needs_avx512 = name == "direct" || name == "implicit_gemm";
    if (needs_avx512 && !cpu_features().avx512) continue;
    if (name.rfind("winograd", 0) == 0 && !cpu_features().avx2_fma) continue;
    if (name == "onednn_bf16" && !bf16_unsupported_reason().empty()) continue;  // refused, with the reason
    if (name.find("winograd") == 0 && name.find("_bf16") != std::string::npos && !cpu_features().avx512_bf16) continue;
    if (name == "grouped" || name == "implicit_nhwc") continue;  // N,H,W,C only: *MatchesNchw below
    EXPECT_GE(ran[a->name], 15) << a->name << " supported too few of the random cases";
  }
}

TEST(ConvAlgorithms, ResNetShapes) {
  // Larger shapes as they occur in real models, each with every supporting algorithm.
  const std::vector<ConvCase> cases = {
      {1, 64, 28, 28, 64, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, true, false, "Relu", 2},
      {1, 32, 30, 30, 32, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, false, false, "Clip", 1},
      {2, 3, 33, 33, 16, 1, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, false, false, false, "", 2},
      {1, 64, 14, 14, 128, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true, false, false, "", 1},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const ConvCase& k = cases[i];
    const ir::Graph g = build(k, 100 + static_cast<uint32_t>(i));
    runtime::TensorMap in = {{"x", testing::random_tensor(g.type_of("x")->static_shape(), 5)}};
    if (k.residual) in["z"] = testing::random_tensor(g.type_of("z")->static_shape(), 6);
    const auto want = testing::run_with_algo(g, in, {"reference"}, "conv", k.threads);
    for (const kernels::Algorithm* a : kernels::algorithms_for("conv")) {
      const auto got = testing::run_with_algo(g, in, {std::string("conv=") + a->name + ",reference"}, "conv", k.threads);
      if (got.algorithm != a->name) continue;
      EXPECT_LE(testing::rel_error(got.out.at("y"), want.out.at("y")), tolerance(a->name))
          << a->name << " on " << describe(k);
      EXPECT_GE(testing::sqnr_db(got.out.at("y"), want.out.at("y")), min_sqnr_db(a->name))
          << a->name << " on " << describe(k);
    }
  }
}

// The same node on N,H,W,C tensors (FusedConv `channels_last`, as the channels_last pass makes
// it): x, the residual and y permuted, the rest unchanged.
ir::Graph channels_last(const ir::Graph& nchw) {
  ir::Graph g = nchw;
  ops::make_channels_last(*g.nodes.back());
  g.opsets["joule"] = 1;
  for (const char* v : {"x", "z", "y"})
    if (g.types.count(v)) g.types[v] = ops::movement::permute_type(g.types[v], ops::movement::kNchwToNhwc);
  return g;
}

Tensor nhwc(const Tensor& t) { return ops::movement::transpose_tensor(t, ops::movement::kNchwToNhwc); }

// Case `k` as a channels_last node with its N,H,W,C inputs, and the N,C,H,W reference's output
// made N,H,W,C.
struct NhwcProblem {
  ir::Graph graph;
  runtime::TensorMap in;
  Tensor want;
};
NhwcProblem nhwc_problem(const ConvCase& k, uint32_t graph_seed, uint32_t input_seed) {
  const ir::Graph g = build(k, graph_seed);
  runtime::TensorMap in = {{"x", testing::random_tensor(g.type_of("x")->static_shape(), input_seed)}};
  if (k.residual) in["z"] = testing::random_tensor(g.type_of("z")->static_shape(), input_seed + 1);
  NhwcProblem p{channels_last(g), {}, nhwc(testing::run_with_algo(g, in, {"reference"}, "conv", k.threads).out.at("y"))};
  for (auto& [name, t] : in) p.in[name] = nhwc(t);
  return p;
}

// onednn on N,H,W,C tensors, and the reference kernel's channels_last path, against the
// N,C,H,W reference; the N,C,H,W-only algorithms refuse such a node, saying why.
TEST(ConvAlgorithms, ChannelsLastMatchesNchw) {
  std::mt19937 rng(77);
  int ran = 0;
  for (int i = 0; i < 80; ++i) {
    const ConvCase k = random_case(rng);
    if (k.one_d) continue;
    const NhwcProblem p = nhwc_problem(k, static_cast<uint32_t>(i), 3u * i);
    const ir::Graph& h = p.graph;
    const runtime::TensorMap& in_nhwc = p.in;
    const Tensor& want = p.want;
    const auto ref = testing::run_with_algo(h, in_nhwc, {"reference"}, "conv", k.threads);
    EXPECT_LE(testing::rel_error(ref.out.at("y"), want), 1e-5) << "reference on " << describe(k);
    const auto got = testing::run_with_algo(h, in_nhwc, {"conv=onednn,reference"}, "conv", k.threads);
    if (got.algorithm != "onednn") continue;
    ++ran;
    EXPECT_LE(testing::rel_error(got.out.at("y"), want), 1e-4) << "onednn on " << describe(k);
    try {
      testing::run_with_algo(h, in_nhwc, {"conv=im2col_gemm"}, "conv", k.threads);
      ADD_FAILURE() << "im2col_gemm ran a channels_last node";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("channels_last"), std::string::npos) << e.what();
    }
  }
  EXPECT_GE(ran, 40);
}

// Strided grouped convs on N,H,W,C tensors, the residual included: many channels in thin groups
// (ResNeXt's downsampling 3x3 layers) compute in oneDNN's blocked layout and reorder, the others
// (RegNet's) in N,H,W,C.
TEST(ConvAlgorithms, ChannelsLastStridedGroupedMatchesNchw) {
  const std::vector<ConvCase> cases = {
      {1, 256, 9, 9, 256, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, true, false, "Relu", 1},
      {1, 32, 15, 15, 32, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, true, false, "Relu", 1},
      {2, 64, 14, 14, 64, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, false, false, "", 2},
      {1, 48, 9, 12, 96, 3, 3, 3, 2, 1, 1, 1, 1, 0, 1, 0, false, true, false, "Clip", 1},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const ConvCase& k = cases[i];
    const NhwcProblem p = nhwc_problem(k, 300 + static_cast<uint32_t>(i), 11u * static_cast<uint32_t>(i));
    const auto got = testing::run_with_algo(p.graph, p.in, {"conv=onednn"}, "conv", k.threads);
    EXPECT_LE(testing::rel_error(got.out.at("y"), p.want), 1e-4) << describe(k);
  }
}


bool kernel_fits(const ConvCase& k) {
  return k.h + k.pt + k.pb >= (k.kh - 1) * k.dh + 1 && k.w + k.pl + k.pr >= (k.kw - 1) * k.dw + 1;
}

// Bias, residual, one of the activations the hand-written kernels apply, and 1 or 2 threads.
void random_simple_epilogue(ConvCase& k, std::mt19937& rng) {
  auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  k.bias = r(0, 3) != 0;
  k.residual = r(0, 2) == 0;
  const char* acts[] = {"", "Relu", "LeakyRelu", "Clip"};
  k.act = acts[r(0, 3)];
  k.threads = static_cast<int>(r(1, 2));
}

// Runs `algo` on the N,H,W,C problem of case k and checks it against the N,C,H,W reference;
// `special`: NaN and Inf written into the input first, NaN positions must match. Returns whether
// a NaN reached the output (a stride or pad may skip the NaN's row).
bool expect_nhwc_algo_matches(const std::string& algo, const ConvCase& k, uint32_t seed, bool special) {
  NhwcProblem p = nhwc_problem(k, 500 + seed, 13u * seed);
  if (special) {
    Tensor& x = p.in.at("x");
    x.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
    x.data<float>()[x.numel() / 2] = std::numeric_limits<float>::infinity();
    p.want = testing::run_with_algo(p.graph, p.in, {"reference"}, "conv", k.threads).out.at("y");
  }
  const auto got = testing::run_with_algo(p.graph, p.in, {"conv=" + algo}, "conv", k.threads);
  EXPECT_EQ(got.algorithm, algo) << describe(k);
  const Tensor& y = got.out.at("y");
  if (!special) {
    EXPECT_LE(testing::rel_error(y, p.want), tolerance(algo)) << algo << " on " << describe(k);
    EXPECT_GE(testing::sqnr_db(y, p.want), min_sqnr_db(algo)) << algo << " on " << describe(k);
    return false;
  }
  int64_t nan = 0;
  for (int64_t e = 0; e < y.numel(); ++e) {
    const float a = y.data<float>()[e], b = p.want.data<float>()[e];
    EXPECT_EQ(std::isnan(a), std::isnan(b)) << algo << " on " << describe(k) << " at " << e;
    nan += std::isnan(b);
    if (!std::isnan(b) && !std::isnan(a) && (std::isinf(a) || std::isinf(b))) {
      EXPECT_EQ(a, b) << describe(k);
    }
  }
  return nan > 0;
}

// The N,H,W,C problem with its residual made inside the graph (z = Neg(zin)) and its output
// read by another node (out = Neg(y)): the session may then compute the conv in place, its
// output over the residual.
NhwcProblem with_inner_residual(NhwcProblem p) {
  ir::Graph& g = p.graph;
  g.types["zin"] = *g.type_of("z");
  std::replace(g.inputs.begin(), g.inputs.end(), std::string("z"), std::string("zin"));
  ir::Node neg;
  neg.op_type = "Neg";
  neg.name = "neg_z";
  neg.inputs = {"zin"};
  neg.outputs = {"z"};
  ir::Node out;
  out.op_type = "Neg";
  out.name = "neg_y";
  out.inputs = {"y"};
  out.outputs = {"out"};
  if (const ir::TensorType* t = g.type_of("y")) g.types["out"] = *t;
  std::vector<std::unique_ptr<ir::Node>> nodes;
  nodes.push_back(std::make_unique<ir::Node>(std::move(neg)));
  for (auto& n : g.nodes) nodes.push_back(std::move(n));
  nodes.push_back(std::make_unique<ir::Node>(std::move(out)));
  g.nodes = std::move(nodes);
  g.outputs = {"out"};
  Tensor zin = p.in.at("z").clone();
  for (int64_t i = 0; i < zin.numel(); ++i) zin.data<float>()[i] = -zin.data<float>()[i];
  p.in.erase("z");
  p.in["zin"] = zin;
  for (int64_t i = 0; i < p.want.numel(); ++i) p.want.data<float>()[i] = -p.want.data<float>()[i];
  return p;
}

// Each N,H,W,C algorithm that says it computes in place (residual_in_place), with its output
// written over the residual: the reference's result, on shapes that take several blocks of k
// (implicit_nhwc adds the residual in the first and overwrites it in the later ones) and
// several tasks over 2 threads; the session planned z and y in one buffer.
TEST(ConvAlgorithms, ResidualInPlaceMatchesNchw) {
  if (!cpu_features().avx2_fma) GTEST_SKIP() << "implicit_nhwc and grouped need AVX2 with FMA";
  const std::vector<std::pair<std::string, ConvCase>> cases = {
      {"implicit_nhwc", {1, 300, 7, 9, 40, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, true, false, "Relu", 2}},
      {"implicit_nhwc", {2, 64, 12, 12, 24, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true, true, false, "", 1}},
      {"grouped", {1, 32, 9, 11, 32, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, true, false, "Clip", 2}},
      {"onednn", {1, 16, 8, 8, 32, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, true, false, "LeakyRelu", 1}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& [algo, k] = cases[i];
    const NhwcProblem p = with_inner_residual(nhwc_problem(k, 700 + static_cast<uint32_t>(i), 17u * static_cast<uint32_t>(i)));
    runtime::SessionOptions o;
    o.threads = k.threads;
    o.algo.add("conv=" + algo);
    runtime::Session s(p.graph, o);
    const runtime::MemoryPlan& plan = s.memory_plan();
    EXPECT_EQ(plan.planned_buffers, 1u) << algo << " on " << describe(k);
    const Tensor got = s.run(p.in).at("out");
    EXPECT_LE(testing::rel_error(got, p.want), 1e-4) << algo << " on " << describe(k);
  }
}

// `grouped` (thin grouped convs on N,H,W,C, 8 output channels per vector) against the N,C,H,W
// reference: 1 to 24 input and 8 to 24 output channels per group, kernels 1x1 to 5x5 with
// strides, dilations and asymmetric pads (edge columns clipped, rows skipped), widths from 1 to
// 40 (blocks of 8/5/4/2/1 columns), residual, every activation it takes, 1 and 2 threads; NaN
// and Inf in some inputs. Every other N,C,H,W-only algorithm and a non-grouped conv are refused.
TEST(ConvAlgorithms, GroupedMatchesNchw) {
  if (!cpu_features().avx2_fma) GTEST_SKIP() << "grouped needs AVX2 with FMA";
  std::mt19937 rng(91);
  auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  int nan_cases = 0;
  for (int i = 0; i < 60; ++i) {
    ConvCase k{};
    k.group = r(2, 6);
    k.c = r(1, 24) * k.group;
    k.m = 8 * r(1, 3) * k.group;
    k.n = r(1, 2);
    k.kh = r(1, 5);
    k.kw = r(1, 5);
    if (r(0, 1)) k.kh = k.kw = 3;
    k.sh = r(1, 2);
    k.sw = r(1, 2);
    k.dh = r(0, 4) == 0 ? 2 : 1;
    k.dw = r(0, 4) == 0 ? 2 : 1;
    k.h = r(1, 12);
    k.w = r(1, 40);
    k.pt = r(0, 2);
    k.pb = r(0, 2);
    k.pl = r(0, 2);
    k.pr = r(0, 2);
    if (!kernel_fits(k)) {
      --i;
      continue;
    }
    random_simple_epilogue(k, rng);
    nan_cases += expect_nhwc_algo_matches("grouped", k, static_cast<uint32_t>(i), i % 5 == 4);
  }
  EXPECT_GE(nan_cases, 6);
  ConvCase plain{1, 16, 8, 8, 16, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false, false, "", 1};
  const NhwcProblem p = nhwc_problem(plain, 1, 2);
  EXPECT_THROW(testing::run_with_algo(p.graph, p.in, {"conv=grouped"}, "conv", 1), Error);
}

// `implicit_nhwc` (dense convs on N,H,W,C as an implicit GEMM, 6 pixels x 16 channels per
// tile) against the N,C,H,W reference: 1 to 40 channels in and out (partial panels and
// vectors), some with 100-300 input channels (the reduction in several blocks, sums added to
// the output between them), kernels 1x1 to 7x7, strides, dilations, asymmetric pads (1x1
// without pads reads the input in place, the rest packs rows), up to 40 x 40 pixels (several
// blocks of pixels; 1 to 5 left for the last tile), batch 1-2, residual, every activation it
// takes, 1 and 2 threads; NaN and Inf in some inputs. A grouped conv is refused.
TEST(ConvAlgorithms, ImplicitNhwcMatchesNchw) {
  if (!cpu_features().avx2_fma) GTEST_SKIP() << "implicit_nhwc needs AVX2 with FMA";
  std::mt19937 rng(93);
  auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  int nan_cases = 0;
  for (int i = 0; i < 60; ++i) {
    ConvCase k{};
    k.group = 1;
    k.c = i % 6 == 1 ? r(100, 300) : r(1, 40);
    k.m = r(1, 40);
    k.n = r(1, 2);
    k.kh = r(1, 7);
    k.kw = r(1, 7);
    if (r(0, 2) == 0) k.kh = k.kw = 3;
    if (r(0, 2) == 0) k.kh = k.kw = 1;
    k.sh = r(1, 2);
    k.sw = r(1, 2);
    k.dh = r(0, 4) == 0 ? 2 : 1;
    k.dw = r(0, 4) == 0 ? 2 : 1;
    k.h = r(1, k.c > 40 ? 12 : 40);
    k.w = r(1, k.c > 40 ? 12 : 40);
    const bool pads = r(0, 2) != 0;
    k.pt = pads ? r(0, 3) : 0;
    k.pb = pads ? r(0, 3) : 0;
    k.pl = pads ? r(0, 3) : 0;
    k.pr = pads ? r(0, 3) : 0;
    if (!kernel_fits(k)) {
      --i;
      continue;
    }
    random_simple_epilogue(k, rng);
    nan_cases += expect_nhwc_algo_matches("implicit_nhwc", k, 100 + static_cast<uint32_t>(i), i % 5 == 4);
  }
  EXPECT_GE(nan_cases, 6);
  ConvCase grouped{1, 16, 8, 8, 16, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false, false, "", 1};
  const NhwcProblem p = nhwc_problem(grouped, 1, 2);
  EXPECT_THROW(testing::run_with_algo(p.graph, p.in, {"conv=implicit_nhwc"}, "conv", 1), Error);
}

// Winograd on N,H,W,C (F(4x4) and F(2x2), float32 and, where the CPU has AVX512-BF16, bf16)
// against the N,C,H,W reference: 3x3 stride 1, 1 to 40 channels in and out (partial vectors and
// panels), some with 100-200 input channels, groups (not depthwise), asymmetric pads (some wider
// than a tile), 1 to 30 pixels (partial tiles at the right and bottom edges, several tile blocks),
// batch 1-3, residual, every activation it takes, 1 and 2 threads. (A NaN spreads over a
// Winograd tile: NanKernels checks that on N,C,H,W.)
TEST(ConvAlgorithms, WinogradMatchesNchwOnNhwc) {
  if (!cpu_features().avx2_fma) GTEST_SKIP() << "winograd needs AVX2 with FMA";
  std::vector<std::string> algos = {"winograd", "winograd_f2"};
  if (cpu_features().avx512_bf16) algos.insert(algos.end(), {"winograd_bf16", "winograd_f2_bf16"});
  std::mt19937 rng(71);
  auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 48; ++i) {
    ConvCase k{};
    k.group = r(0, 3) == 0 ? r(2, 3) : 1;
    k.c = k.group * (i % 6 == 1 ? r(100, 200) : r(2, 40));
    k.m = k.group * r(1, 40);
    k.n = r(1, 3);
    k.kh = k.kw = 3;
    k.sh = k.sw = k.dh = k.dw = 1;
    k.h = r(1, k.c > 40 ? 12 : 30);
    k.w = r(1, k.c > 40 ? 12 : 30);
    k.pt = r(0, 2);
    k.pb = r(0, 2);
    k.pl = r(0, i % 8 == 3 ? 9 : 2);
    k.pr = r(0, 2);
    if (!kernel_fits(k)) {
      --i;
      continue;
    }
    random_simple_epilogue(k, rng);
    expect_nhwc_algo_matches(algos[static_cast<size_t>(i) % algos.size()], k, 300 + static_cast<uint32_t>(i), false);
  }
}

// ConvTranspose's gemm algorithm against the reference kernel: 1-D to 3-D, groups, strides,
// dilations, pads, output_padding, output_shape, with and without bias; batches split over
// threads (one-thread SGEMMs) and a single image (the SGEMM on the pool, col2im by channel).
TEST(ConvTransposeAlgorithms, GemmMatchesReference) {
  struct Case {
    Shape x, w;
    std::map<std::string, ir::Attribute> attrs;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{100, 16, 7, 7}, {16, 8, 2, 2}, {{"strides", Ints{2, 2}}}, true},  // Mask R-CNN's mask upsampling
      {{1, 12, 9, 11}, {12, 5, 3, 3}, {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"output_padding", Ints{1, 0}}}, true},
      {{2, 8, 6, 5}, {8, 3, 3, 2}, {{"group", int64_t{2}}, {"dilations", Ints{2, 1}}, {"strides", Ints{1, 3}}}, false},
      {{3, 6, 17}, {6, 4, 4}, {{"strides", Ints{2}}, {"pads", Ints{1, 2}}}, true},
      {{1, 4, 3, 4, 5}, {4, 2, 2, 3, 2}, {{"strides", Ints{1, 2, 2}}}, true},
      {{1, 6, 5, 5}, {6, 3, 3, 3}, {{"strides", Ints{2, 2}}, {"output_shape", Ints{10, 10}}, {"auto_pad", std::string("SAME_UPPER")}}, false},
  };
  uint32_t seed = 1;
  for (const Case& c : cases)
    for (int threads : {1, 2}) {
      GraphBuilder b;
      b.g.opsets[""] = 13;
      b.input("x", DType::Float32, c.x);
      b.init("w", testing::random_tensor(c.w, seed++, -1, 1));
      std::vector<std::string> in = {"x", "w"};
      if (c.bias) {
        const int64_t group = c.attrs.count("group") ? std::get<int64_t>(c.attrs.at("group")) : 1;
        b.init("b", testing::random_tensor({c.w[1] * group}, seed++, -1, 1));
        in.push_back("b");
      }
      b.node("ConvTranspose", in, {"y"}, c.attrs);
      b.g.nodes.back()->name = "op";
      b.output("y");
      const Tensor x = testing::random_tensor(c.x, seed++, -1, 1);
      const auto want = testing::run_with_algo(b.g, {{"x", x}}, {"reference"}, "op", threads);
      const auto got = testing::run_with_algo(b.g, {{"x", x}}, {"conv_transpose=gemm"}, "op", threads);
      const std::string what = fmt::format("ConvTranspose x {} w {} threads {}", shape_str(c.x), shape_str(c.w), threads);
      ASSERT_EQ(got.algorithm, "gemm") << what;
      ASSERT_EQ(got.out.at("y").shape(), want.out.at("y").shape()) << what;
      EXPECT_LT(testing::rel_error(got.out.at("y"), want.out.at("y")), 1e-5) << what;
    }
}

// A node whose input shape is known only at run time (a detector's per-detection head) runs a
// fast algorithm chosen per shape when it runs, not the reference kernel.
TEST(ConvTransposeAlgorithms, DynamicBatchIsChosenAtRunTime) {
  GraphBuilder b;
  b.g.opsets[""] = 13;
  b.input_sym("x", DType::Float32, {ir::Dim{-1, "n"}, ir::Dim{8, ""}, ir::Dim{5, ""}, ir::Dim{5, ""}});
  b.init("w", testing::random_tensor({8, 4, 2, 2}, 7, -1, 1));
  b.node("ConvTranspose", {"x", "w"}, {"y"}, {{"strides", Ints{2, 2}}});
  b.g.nodes.back()->name = "op";
  b.output("y");
  for (int64_t n : {3, 1, 3}) {
    const Tensor x = testing::random_tensor({n, 8, 5, 5}, static_cast<uint32_t>(n), -1, 1);
    const auto want = testing::run_with_algo(b.g, {{"x", x}}, {"reference"}, "op", 1);
    const auto got = testing::run_with_algo(b.g, {{"x", x}}, {}, "op", 1);
    EXPECT_EQ(got.algorithm, "by_shape");
    EXPECT_LT(testing::rel_error(got.out.at("y"), want.out.at("y")), 1e-5);
  }
  // the same session, shapes changing between runs, and what ran is in the kernel's detail
  runtime::Session s(b.g, {});
  for (int64_t n : {2, 5, 2}) {
    const Tensor x = testing::random_tensor({n, 8, 5, 5}, static_cast<uint32_t>(n), -1, 1);
    EXPECT_EQ(s.run({{"x", x}}).at("y").shape(), (Shape{n, 4, 10, 10}));
  }
}

}  // namespace
}  // namespace joule
