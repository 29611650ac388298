// Per-kernel GFLOP/s and % of this CPU's FP32 peak for every algorithm on the convolution
// and matmul shapes of resnet18/50, mobilenet_v2 and a ViT. Each benchmark compiles a
// one-node Session with the algorithm forced, so the numbers include what the engine does
// around the kernel (output allocation, layout reorders). Winograd is counted at its direct
// convolution FLOPs (2 x MACs), as cuDNN and the papers do.
//   build/bench/joule_kernels_bench --benchmark_filter=conv --benchmark_min_time=0.2
// Environment: JOULE_BENCH_THREADS (default 1).
#include <benchmark/benchmark.h>
#include <fmt/core.h>

#include <cstdlib>
#include <random>

#include "joule/kernels/algorithm.h"
#include "joule/profile/cpu_peak.h"
#include "joule/runtime/session.h"

namespace joule {
namespace {

using Ints = std::vector<int64_t>;

int bench_threads() {
  const char* t = std::getenv("JOULE_BENCH_THREADS");
  return t ? std::atoi(t) : 1;
}

Tensor random_tensor(const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  Tensor t(DType::Float32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

struct ConvBench {
  const char* name;
  int64_t c, hw, m, k, stride, group;
};

// Layers of resnet18/50 and mobilenet_v2 at batch 1.
const ConvBench kConvs[] = {
    {"r18_conv1_7x7s2", 3, 224, 64, 7, 2, 1},   {"r18_56x56_64", 64, 56, 64, 3, 1, 1},
    {"r18_28x28_128", 128, 28, 128, 3, 1, 1},   {"r18_14x14_256", 256, 14, 256, 3, 1, 1},
    {"r18_7x7_512", 512, 7, 512, 3, 1, 1},      {"r18_56to28_s2", 64, 56, 128, 3, 2, 1},
    {"r50_1x1_64to256", 64, 56, 256, 1, 1, 1}, {"r50_1x1_256to64", 256, 56, 64, 1, 1, 1},
    {"mb2_dw_112_32", 32, 112, 32, 3, 1, 32},   {"mb2_dw_56_144_s2", 144, 56, 144, 3, 2, 144},
};

void conv_bench(benchmark::State& st, ConvBench b, std::string algo) {
  const int64_t pad = b.k / 2;
  ir::Graph g;
  g.opsets[""] = 17;
  g.inputs = {"x"};
  g.types["x"] = ir::TensorType::of(DType::Float32, {1, b.c, b.hw, b.hw});
  g.initializers["w"] = random_tensor({b.m, b.c / b.group, b.k, b.k}, 1);
  g.types["w"] = ir::TensorType::of(DType::Float32, {b.m, b.c / b.group, b.k, b.k});
  ir::Node n;
  n.name = "conv";
  n.op_type = "Conv";
  n.inputs = {"x", "w"};
  n.outputs = {"y"};
  n.attrs = {{"pads", Ints{pad, pad, pad, pad}}, {"strides", Ints{b.stride, b.stride}}, {"group", b.group}};
  g.add_node(std::move(n));
  g.outputs = {"y"};
  runtime::SessionOptions o;
  o.threads = bench_threads();
  o.algo.add("conv=" + algo);
  std::unique_ptr<runtime::Session> s;
  try {
    s = std::make_unique<runtime::Session>(g, o);
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
    return;
  }
  const runtime::TensorMap in = {{"x", random_tensor({1, b.c, b.hw, b.hw}, 2)}};
  for (auto _ : st) benchmark::DoNotOptimize(s->run(in));
  const int64_t o_hw = (b.hw + 2 * pad - b.k) / b.stride + 1;
  const double flops = 2.0 * b.m * o_hw * o_hw * (b.c / b.group) * b.k * b.k;
  st.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["%peak"] = benchmark::Counter(flops * 1e-9 / profile::peak_gflops(o.threads) * 100,
                                            benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel(s->step_node(0).meta["software"].value("algorithm_detail", ""));
}

struct MatMulBench {
  const char* name;
  int64_t m, k, n;
};
const MatMulBench kMatMuls[] = {{"vit_qkv_197x384x1152", 197, 384, 1152}, {"vit_mlp_197x384x1536", 197, 384, 1536},
                                {"vitb_qkv_197x768x2304", 197, 768, 2304}, {"vitb_fc1_197x768x3072", 197, 768, 3072},
                                {"vitb_fc2_197x3072x768", 197, 3072, 768}, {"fc_1x512x1000", 1, 512, 1000},
                                {"r50_fc_1x2048x1000", 1, 2048, 1000}};

void matmul_bench(benchmark::State& st, MatMulBench b, std::string algo) {
  ir::Graph g;
  g.opsets[""] = 17;
  g.inputs = {"a"};
  g.types["a"] = ir::TensorType::of(DType::Float32, {b.m, b.k});
  g.initializers["w"] = random_tensor({b.k, b.n}, 1);
  g.types["w"] = ir::TensorType::of(DType::Float32, {b.k, b.n});
  ir::Node n;
  n.name = "mm";
  n.op_type = "MatMul";
  n.inputs = {"a", "w"};
  n.outputs = {"y"};
  g.add_node(std::move(n));
  g.outputs = {"y"};
  runtime::SessionOptions o;
  o.threads = bench_threads();
  o.algo.add("matmul=" + algo);
  runtime::Session s(g, o);
  const runtime::TensorMap in = {{"a", random_tensor({b.m, b.k}, 2)}};
  for (auto _ : st) benchmark::DoNotOptimize(s.run(in));
  const double flops = 2.0 * b.m * b.k * b.n;
  st.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["%peak"] = benchmark::Counter(flops * 1e-9 / profile::peak_gflops(o.threads) * 100,
                                            benchmark::Counter::kIsIterationInvariantRate);
}

// Registered from main: the algorithm table is not ready during static initialisation
// (registering from a global's initialiser crashed at start-up).
}  // namespace

void register_all() {
  for (const ConvBench& b : kConvs)
    for (const kernels::Algorithm* a : kernels::algorithms_for("conv"))
      benchmark::RegisterBenchmark(fmt::format("conv/{}/{}", b.name, a->name).c_str(), conv_bench, b,
                                   std::string(a->name));
  for (const ConvBench& b : kConvs)
    benchmark::RegisterBenchmark(fmt::format("conv/{}/reference", b.name).c_str(), conv_bench, b,
                                 std::string("reference"));
  for (const MatMulBench& b : kMatMuls) {
    for (const kernels::Algorithm* a : kernels::algorithms_for("matmul"))
      benchmark::RegisterBenchmark(fmt::format("matmul/{}/{}", b.name, a->name).c_str(), matmul_bench, b,
                                   std::string(a->name));
    benchmark::RegisterBenchmark(fmt::format("matmul/{}/reference", b.name).c_str(), matmul_bench, b,
                                 std::string("reference"));
  }
}

}  // namespace joule

int main(int argc, char** argv) {
  joule::register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
