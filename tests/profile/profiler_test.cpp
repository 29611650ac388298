// The profiler on small graphs: per-layer rows, attribution computed from the rows (no timing
// bounds at all: this machine is noisy and a timing band failed CI once), JSON/CSV/trace schemas, energy wiring, sweeps, resume.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "graph_builder.h"
#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/profile/sweep.h"

using namespace joule;
using namespace joule::profile;
using joule::testing::GraphBuilder;
namespace fs = std::filesystem;
using Ints = std::vector<int64_t>;

namespace {
fs::path temp_dir(const std::string& tag) {
  auto p = fs::temp_directory_path() / ("joule_profile_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

Tensor filled(Shape s, float v) {
  Tensor t(DType::Float32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v * static_cast<float>((i % 7) - 3);
  return t;
}

// Conv -> Relu -> MaxPool -> Conv -> Relu -> GlobalAveragePool -> Flatten (7 nodes).
ir::Graph cnn(int64_t size = 32) {
  return GraphBuilder()
      .input("x", DType::Float32, {1, 4, size, size})
      .init("w1", filled({8, 4, 3, 3}, 0.1f))
      .init("w2", filled({8, 8, 3, 3}, 0.1f))
      .node("Conv", {"x", "w1"}, {"c1"}, {{"pads", Ints{1, 1, 1, 1}}}, "conv1")
      .node("Relu", {"c1"}, {"r1"}, {}, "relu1")
      .node("MaxPool", {"r1"}, {"p1"}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}, "pool1")
      .node("Conv", {"p1", "w2"}, {"c2"}, {{"pads", Ints{1, 1, 1, 1}}}, "conv2")
      .node("Relu", {"c2"}, {"r2"}, {}, "relu2")
      .node("GlobalAveragePool", {"r2"}, {"g"}, {}, "gap")
      .node("Flatten", {"g"}, {"y"}, {}, "flat")
      .output("y")
      .build();
}

ProfileOptions quick() {
  ProfileOptions o;
  o.model_name = "cnn";
  o.threads = 1;
  o.warmup = 1;
  o.runs = 5;
  o.algo.add("reference");
  return o;
}
}  // namespace

TEST(Profiler, LayersAttributionAndOpTypes) {
  ProfileResult r = profile_model(cnn(), quick());
  ASSERT_EQ(r.layers.size(), 7u);
  EXPECT_EQ(r.plain_samples_ms.size(), 5u);
  EXPECT_EQ(r.instrumented_samples_ms.size(), 5u);
  EXPECT_EQ(r.algorithm, "reference");
  EXPECT_EQ(r.batch, 1);
  EXPECT_EQ(r.input_size, "32");
  EXPECT_EQ(r.threads, 1);
  // Attribution is the sum of the layer medians over the plain median (no timing band: noisy).
  double layer_sum = 0;
  for (const LayerResult& L : r.layers) layer_sum += L.ms.median;
  EXPECT_NEAR(r.layer_sum_ms, layer_sum, 1e-9 * layer_sum);
  ASSERT_GT(r.plain_ms.median, 0.0);
  EXPECT_NEAR(r.attribution_pct, 100.0 * layer_sum / r.plain_ms.median, 1e-9 * r.attribution_pct);
  double pct = 0;
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const LayerResult& L = r.layers[i];
    if (i) {
      EXPECT_GE(r.layers[i - 1].ms.median, L.ms.median);  // sorted by time
    }
    EXPECT_EQ(L.ms.n, 5u);
    EXPECT_EQ(L.algorithm, "reference");
    pct += L.pct;
    EXPECT_NEAR(L.cum_pct, pct, 1e-9);
  }
  EXPECT_NEAR(pct, 100.0, 1e-6);
  auto conv = std::find_if(r.layers.begin(), r.layers.end(), [](auto& L) { return L.name == "conv1"; });
  ASSERT_NE(conv, r.layers.end());
  EXPECT_TRUE(conv->has_cost);
  EXPECT_DOUBLE_EQ(conv->flops, 2.0 * 8 * 4 * 9 * 32 * 32);  // 2 * Cout * Cin * k*k * H*W
  EXPECT_GT(conv->gflops, 0.0);
  EXPECT_EQ(conv->outputs.at(0), "float32[1,8,32,32]");
  // Op types: Conv x2, Relu x2, ...
  ASSERT_EQ(r.op_types.size(), 5u);
  int convs = 0;
  for (auto& o : r.op_types)
    if (o.op == "Conv") convs = o.count;
  EXPECT_EQ(convs, 2);
  EXPECT_GE(r.op_types_for_coverage, 1);
  EXPECT_LE(r.op_types_for_coverage, 5);
  EXPECT_GT(r.peak_gflops, 0.0);
  EXPECT_NE(r.peak.assumptions.find("FLOP/cycle"), std::string::npos);
  std::string table = format_report(r, 3);
  EXPECT_NE(table.find("attribution:"), std::string::npos);
  EXPECT_NE(table.find("observer overhead"), std::string::npos);
  EXPECT_NE(table.find("4 more layers"), std::string::npos);
}

TEST(Profiler, AlgorithmColumnReadsNodeMetadata) {
  ProfileOptions o = quick();
  o.algo.add("conv1=onednn");
  ProfileResult r = profile_model(cnn(), o);
  EXPECT_EQ(r.algorithm, "mixed");
  for (auto& L : r.layers) EXPECT_EQ(L.algorithm, L.name == "conv1" ? "onednn" : "reference");
}

TEST(Profiler, JsonCsvAndTraceSchemas) {
  ProfileResult r = profile_model(cnn(), quick());
  nlohmann::json j = nlohmann::json::parse(to_json(r).dump());  // round trip
  EXPECT_EQ(j["schema_version"], 1);
  for (const char* k : {"model", "algorithm", "input_shape", "batch", "threads", "latency_ms", "latency_samples_ms",
                        "instrumented_latency_ms", "observer_overhead_pct", "attribution", "cpu_peak", "layers",
                        "op_types", "coverage", "energy"})
    EXPECT_TRUE(j.contains(k)) << k;
  for (const char* k : {"mean", "median", "std", "min", "max", "p90", "p99", "cv", "trimmed_mean_3sigma", "trimmed_count", "noisy"})
    EXPECT_TRUE(j["latency_ms"].contains(k)) << k;
  ASSERT_EQ(j["layers"].size(), 7u);
  for (auto& L : j["layers"])
    for (const char* k : {"name", "op", "algorithm", "inputs", "outputs", "flops", "bytes", "latency_ms", "pct"})
      EXPECT_TRUE(L.contains(k)) << k;

  // Chrome trace: parses, one complete event per executed node, in µs, non-overlapping.
  nlohmann::json t = nlohmann::json::parse(r.trace.dump());
  int x = 0;
  double last_end = -1;
  for (auto& e : t["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++x;
    for (const char* k : {"name", "ts", "dur", "pid", "tid", "args"}) EXPECT_TRUE(e.contains(k)) << k;
    EXPECT_TRUE(e["args"].contains("op"));
    EXPECT_TRUE(e["args"].contains("algorithm"));
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    EXPECT_GE(e["ts"].get<double>(), last_end - 1e-6);
    last_end = e["ts"].get<double>() + e["dur"].get<double>();
  }
  EXPECT_EQ(x, 7);

  auto overall = parse_csv(csv_line(overall_csv_columns()) + csv_line(overall_csv_row(r)));
  ASSERT_EQ(overall.size(), 2u);
  EXPECT_EQ(overall[0].size(), 14u);
  EXPECT_EQ(overall[1].size(), 14u);
  EXPECT_EQ(overall[1][0], "cnn");
  EXPECT_EQ(overall[1][13], "none");
  auto rows = layers_csv_rows(r);
  ASSERT_EQ(rows.size(), 7u);
  for (auto& row : rows) EXPECT_EQ(row.size(), layers_csv_columns().size());
  // Quoting round-trips.
  auto q = parse_csv(csv_line({"a,b", "say \"hi\"", ""}));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0], (std::vector<std::string>{"a,b", "say \"hi\"", ""}));
}

TEST(Profiler, EstimatedEnergyPerLayerAddsUp) {
  ProfileOptions o = quick();
  o.energy = "estimate";
  ProfileResult r = profile_model(cnn(), o);
  ASSERT_TRUE(r.energy);
  EXPECT_EQ(r.energy->source, "estimate:default-cpu");
  EXPECT_FALSE(r.energy->idle_power_w);
  EXPECT_GT(r.energy->joules_per_inference, 0.0);
  ASSERT_TRUE(r.energy->attribution_pct);
  ASSERT_TRUE(r.energy->layer_sum_j);
  double sum_j = 0;
  for (auto& L : r.layers) {
    ASSERT_TRUE(L.energy_j) << L.name;
    EXPECT_GT(*L.energy_j, 0.0) << L.name;
    EXPECT_EQ(L.energy_iterations, 0);  // modelled, not replayed
    sum_j += *L.energy_j;
  }
  // The layers' modelled joules add up to the reported sum; the ratio is over the whole-model figure.
  EXPECT_NEAR(*r.energy->layer_sum_j, sum_j, 1e-9 * sum_j);
  EXPECT_NEAR(*r.energy->attribution_pct, 100.0 * sum_j / r.energy->dynamic_joules_per_inference,
              1e-9 * *r.energy->attribution_pct);
  EXPECT_FALSE(r.energy->attribution_total_pct);  // modelled: no sensor, no idle-in figure
  auto row = overall_csv_row(r);
  EXPECT_EQ(row[13], "estimate:default-cpu");
  EXPECT_FALSE(row[12].empty());
}

TEST(Profiler, SensorPathReplaysLayers) {
  // A frozen fake RAPL tree: zero joules, but the replay and window logic run for real.
  fs::path d = temp_dir("rapl");
  auto put = [&](const fs::path& p, const std::string& s) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << s << "\n";
  };
  put(d / "intel-rapl:0/name", "package-0");
  put(d / "intel-rapl:0/energy_uj", "100");
  put(d / "intel-rapl:0/max_energy_range_uj", "1000000");
  ProfileOptions o = quick();
  o.energy = "rapl";
  o.meter.powercap_root = d.string();
  o.meter.min_window_s = 0.002;
  ProfileResult r = profile_model(cnn(16), o);
  ASSERT_TRUE(r.energy);
  EXPECT_EQ(r.energy->source, "rapl");
  ASSERT_TRUE(r.energy->idle_power_w);
  EXPECT_DOUBLE_EQ(*r.energy->idle_power_w, 0.0);
  EXPECT_GE(r.energy->iterations, 5);
  EXPECT_GE(r.energy->seconds, 0.002);
  for (auto& L : r.layers) {
    ASSERT_TRUE(L.energy_j);
    EXPECT_GE(L.energy_iterations, 1);
    EXPECT_DOUBLE_EQ(*L.energy_j, 0.0);
  }
  EXPECT_FALSE(r.energy->attribution_pct);  // 0 J whole-model: no ratio invented
  ASSERT_TRUE(r.energy->layer_sum_total_j);  // replayed: the idle-in sum exists (0 J here)
  EXPECT_DOUBLE_EQ(*r.energy->layer_sum_total_j, 0.0);
  EXPECT_FALSE(r.energy->attribution_total_pct);
  fs::remove_all(d);
}

TEST(Profiler, NamedSensorMissingIsBadInput) {
  ProfileOptions o = quick();
  o.energy = "rapl";
  o.meter.powercap_root = "/nonexistent/powercap";
  try {
    profile_model(cnn(16), o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_user_error());
    EXPECT_NE(std::string(e.what()).find("rapl energy not available"), std::string::npos);
  }
}

TEST(Sweep, AlgorithmPointsAreLabelledAndRunTheirAlgorithms) {
  SweepSpec s;
  s.algos = {"conv=onednn", "reference"};
  ProfileOptions o = quick();
  o.algo = {};  // quick() forces reference; the points choose here
  SweepOutcome out = run_sweep(cnn(16), s, o, "", false);
  ASSERT_EQ(out.measured.size(), 2u);
  EXPECT_EQ(out.measured[0].algorithm, "conv=onednn");
  EXPECT_EQ(out.measured[1].algorithm, "reference");
  for (auto& L : out.measured[0].layers) {
    if (L.op == "Conv") {
      EXPECT_EQ(L.algorithm, "onednn");
    }
  }
  for (auto& L : out.measured[1].layers) EXPECT_EQ(L.algorithm, "reference");
}

TEST(Sweep, CartesianProductAndShapes) {
  SweepSpec s;
  s.batches = {1, 2};
  s.input_sizes = {16, 24};
  s.threads = {1, 2};
  EXPECT_EQ(sweep_points(s, 1).size(), 8u);
  s.algos = {"conv=onednn", "reference"};
  EXPECT_EQ(sweep_points(s, 1).size(), 16u);
  ir::Graph g = cnn();
  auto m = input_shapes_for(g, {2, 24, 1, ""});
  EXPECT_EQ(m.at("x"), (Shape{2, 4, 24, 24}));
  EXPECT_TRUE(input_shapes_for(g, {-1, -1, 1, ""}).empty());
  ProfileOptions o = quick();
  SweepSpec st;
  apply_stage("quick", st, o, false, false);
  EXPECT_EQ(o.runs, 10);
  EXPECT_GE(sweep_points(st, 1).size(), 5u);
  o.runs = 7;
  SweepSpec sf;
  apply_stage("full", sf, o, true, false);
  EXPECT_EQ(o.runs, 7);  // an explicit --runs wins
  EXPECT_EQ(sf.batches.size(), 40u);
  EXPECT_EQ(sf.batches.front(), 1);
  EXPECT_EQ(sf.batches.back(), 128);
  EXPECT_THROW(apply_stage("bogus", sf, o, false, false), Error);
}

TEST(Sweep, PinnedInputSizeIsAClearError) {
  // Reshape to a constant [1, 256]: only 4x8x8 inputs fit.
  ir::Graph g = GraphBuilder()
                    .input("x", DType::Float32, {1, 4, 8, 8})
                    .init("shape", Tensor::from_vector<int64_t>({1, 256}, {2}))
                    .init("w", filled({256, 10}, 0.01f))
                    .node("Reshape", {"x", "shape"}, {"f"})
                    .node("MatMul", {"f", "w"}, {"y"})
                    .output("y")
                    .build();
  SweepSpec s;
  s.input_sizes = {16};
  try {
    run_sweep(g, s, quick(), "", false);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_user_error());
    EXPECT_NE(std::string(e.what()).find("cannot run at input size 16"), std::string::npos) << e.what();
  }
  s.input_sizes = {8};
  EXPECT_EQ(run_sweep(g, s, quick(), "", false).measured.size(), 1u);
}

TEST(Sweep, WritesFilesAndResumes) {
  fs::path d = temp_dir("sweep");
  SweepSpec s;
  s.batches = {1, 2};
  ProfileOptions o = quick();
  o.runs = 2;
  // A sweep interrupted after its first point: that point's row is already in the CSV.
  ProfileOptions first = o;
  first.input_shapes = input_shapes_for(cnn(16), {1, -1, 1, ""});
  PointKey k = point_key(cnn(16), first);
  EXPECT_EQ(k.batch, 1);
  auto cols = overall_csv_columns();
  std::vector<std::string> row = k.fields();
  row.resize(cols.size(), "1");
  write_file_atomic((d / "cnn_overall.csv").string(), csv_line(cols) + csv_line(row));

  SweepOutcome a = run_sweep(cnn(16), s, o, d.string(), true);
  ASSERT_EQ(a.measured.size(), 1u);
  EXPECT_EQ(a.measured[0].batch, 2);
  ASSERT_EQ(a.skipped.size(), 1u);
  auto overall = parse_csv(read_file((d / "cnn_overall.csv").string()));
  EXPECT_EQ(overall.size(), 3u);  // header + 2 points
  auto layers = parse_csv(read_file((d / "cnn_layers.csv").string()));
  EXPECT_EQ(layers.size(), 1u + 7u);
  EXPECT_EQ(layers[0], layers_csv_columns());
  nlohmann::json pj = nlohmann::json::parse(read_file((d / "profile.json").string()));
  EXPECT_EQ(pj["schema_version"], 1);
  EXPECT_EQ(pj["points"].size(), 1u);
  nlohmann::json tj = nlohmann::json::parse(read_file((d / "trace.json").string()));
  EXPECT_TRUE(tj.contains("traceEvents"));

  // Rerun: nothing left to measure, no new rows.
  SweepOutcome b = run_sweep(cnn(16), s, o, d.string(), true);
  EXPECT_EQ(b.measured.size(), 0u);
  EXPECT_EQ(b.skipped.size(), 2u);
  EXPECT_EQ(parse_csv(read_file((d / "cnn_overall.csv").string())).size(), 3u);

  // Without resume the files start afresh.
  s.batches = {1};
  run_sweep(cnn(16), s, o, d.string(), false);
  EXPECT_EQ(parse_csv(read_file((d / "cnn_overall.csv").string())).size(), 2u);
  fs::remove_all(d);
}

// A Loop of 4 iterations whose body is Relu -> Neg: the body's nodes get rows of their own (4
// calls per inference each, their time inside the Loop's row), and the Loop's body says how
// often it ran; the JSON carries both.
TEST(Profiler, ControlFlowBodyNodesGetTheirOwnRows) {
  GraphBuilder body;
  body.input("i", DType::Int64, {}).input("c", DType::Bool, {}).input("acc", DType::Float32, {256});
  body.node("Relu", {"acc"}, {"r"}, {}, "body_relu").node("Neg", {"r"}, {"acc2"}, {}, "body_neg").node("Identity", {"c"}, {"c2"}, {}, "body_cond");
  body.output("c2").output("acc2");
  ir::Graph g = GraphBuilder()
                    .input("x", DType::Float32, {256})
                    .init("trips", Tensor::scalar<int64_t>(4))
                    .node("Loop", {"trips", "", "x"}, {"y"}, {{"body", std::make_shared<const ir::Graph>(body.g)}}, "loop")
                    .output("y")
                    .build();
  ProfileOptions o = quick();
  o.algo = kernels::AlgoSpec{};
  ProfileResult r = profile_model(g, o);
  ASSERT_EQ(r.bodies.size(), 1u);
  EXPECT_EQ(r.bodies[0].owner, "loop");
  EXPECT_EQ(r.bodies[0].attribute, "body");
  EXPECT_DOUBLE_EQ(r.bodies[0].runs, 4.0);
  EXPECT_EQ(r.bodies[0].fallback, "");
  ASSERT_EQ(r.body_nodes.size(), 3u);
  for (const BodyNodeResult& b : r.body_nodes) {
    EXPECT_DOUBLE_EQ(b.calls, 4.0) << b.name;
    EXPECT_GE(b.ms, 0.0);
    if (b.name == "body_relu") {
      EXPECT_NE(b.algorithm, "reference");
    }
  }
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["bodies"][0]["runs_per_inference"].get<double>(), 4.0);
  EXPECT_EQ(j["body_nodes"].size(), 3u);
  EXPECT_NE(format_report(r, 10).find("control-flow bodies"), std::string::npos);
}
