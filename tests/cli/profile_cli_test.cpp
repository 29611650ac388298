// `joule profile` and `joule energy` as a user runs them: files written, resume, exit codes.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "graph_builder.h"
#include "joule/core/file_util.h"
#include "joule/onnx/model_io.h"
#include "joule/profile/profiler.h"

using namespace joule;
using joule::testing::GraphBuilder;
namespace fs = std::filesystem;

namespace {
using Result = joule::testing::CliResult;
using joule::testing::run_joule;

fs::path work_dir() {
  static fs::path d = joule::testing::scratch_dir("profile_cli");
  return d;
}

std::string cnn_path() {
  auto p = work_dir() / "tiny_cnn.onnx";
  if (!fs::exists(p)) {
    using Ints = std::vector<int64_t>;
    ir::Graph g = GraphBuilder()
                      .input("x", DType::Float32, {1, 2, 12, 12})
                      .init("w", joule::testing::iota_tensor({4, 2, 3, 3}, -1.f, 0.05f))
                      .node("Conv", {"x", "w"}, {"c"}, {{"pads", Ints{1, 1, 1, 1}}}, "conv")
                      .node("Relu", {"c"}, {"r"}, {}, "relu")
                      .node("GlobalAveragePool", {"r"}, {"y"}, {}, "gap")
                      .output("y")
                      .build();
    onnx::save_model(g, p.string());
  }
  return p.string();
}

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }
}  // namespace

TEST(ProfileCli, TableAndFiles) {
  auto out = work_dir() / "one";
  Result r = run_joule("profile " + cnn_path() + " --threads 1 --runs 3 --warmup 1 --top 1 -o " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("attribution: sum of per-layer medians"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("observer overhead"), std::string::npos);
  EXPECT_NE(r.out.find("op types cover 90%"), std::string::npos);
  EXPECT_NE(r.out.find("1 more layers"), std::string::npos);
  for (const char* f : {"tiny_cnn_overall.csv", "tiny_cnn_layers.csv", "profile.json", "trace.json"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  auto pj = nlohmann::json::parse(read_file((out / "profile.json").string()));
  EXPECT_EQ(pj["schema_version"], 1);
  ASSERT_EQ(pj["points"].size(), 1u);
  EXPECT_EQ(pj["points"][0]["layers"].size(), 2u);  // Conv+Relu fused by the default passes
  auto tj = nlohmann::json::parse(read_file((out / "trace.json").string()));
  int x = 0;
  for (auto& e : tj["traceEvents"]) x += e["ph"] == "X";
  EXPECT_EQ(x, 2);
  EXPECT_EQ(lines(read_file((out / "tiny_cnn_overall.csv").string())), 2);
  // A single-point profile starts its files afresh.
  r = run_joule("profile " + cnn_path() + " --threads 1 --runs 2 --warmup 0 -o " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(lines(read_file((out / "tiny_cnn_overall.csv").string())), 2);
}

TEST(ProfileCli, JsonAndEstimatedEnergy) {
  Result r = run_joule("profile " + cnn_path() + " --threads 1 --runs 2 --energy estimate --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  auto& e = j["points"][0]["energy"];
  EXPECT_EQ(e["source"], "estimate:default-cpu");
  EXPECT_GT(e["joules_per_inference"].get<double>(), 0.0);
  EXPECT_TRUE(j["points"][0]["layers"][0].contains("energy_j"));
}

TEST(ProfileCli, SweepResumes) {
  auto out = work_dir() / "sweep";
  std::string cmd = "profile " + cnn_path() + " --threads 1 --runs 2 --warmup 0 --batch 1,2 --quiet -o " + out.string();
  Result a = run_joule(cmd);
  ASSERT_EQ(a.code, 0) << a.out;
  EXPECT_NE(a.out.find("2 point(s) measured, 0 already"), std::string::npos) << a.out;
  Result b = run_joule(cmd);
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_NE(b.out.find("0 point(s) measured, 2 already"), std::string::npos) << b.out;
  EXPECT_EQ(lines(read_file((out / "tiny_cnn_overall.csv").string())), 3);
}

TEST(ProfileCli, ErrorsAreOneLineExit2) {
  Result r = run_joule("profile " + cnn_path() + " --runs 1 --energy rapl --powercap-root /nonexistent/powercap");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(lines(r.out), 1) << r.out;
  EXPECT_NE(r.out.find("rapl energy not available"), std::string::npos);
  r = run_joule("profile " + cnn_path() + " --runs 1 --input-size 16,24 --batch 3");
  EXPECT_EQ(r.code, 0) << r.out;  // a conv net without pinned shapes runs at any size
  r = run_joule("profile " + cnn_path() + " --runs 1 --energy bogus");
  EXPECT_EQ(r.code, 2);
  r = run_joule("profile /nonexistent/model.onnx");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.out), 1) << r.out;
}

TEST(ProfileCli, EnergyProbeAndCalibrateWithoutSensor) {
  Result p = run_joule("energy probe --powercap-root /nonexistent/powercap");
  ASSERT_EQ(p.code, 0) << p.out;
  EXPECT_NE(p.out.find("--energy auto uses:"), std::string::npos);
  if (p.out.find("uses: estimate:") == std::string::npos) GTEST_SKIP() << "this machine has an energy sensor";
  Result c = run_joule("energy calibrate " + cnn_path() + " --powercap-root /nonexistent/powercap -o " +
                       (work_dir() / "cal.json").string());
  EXPECT_EQ(c.code, 2) << c.out;
  EXPECT_EQ(lines(c.out), 1) << c.out;
  EXPECT_NE(c.out.find("no energy sensor"), std::string::npos) << c.out;
}

// The kill the random test above can miss: between a point's two appends (its layer rows
// written, its overall row not). The resumed sweep measures that point again and must not list
// its layers twice.
TEST(ProfileCli, KillBetweenTheTwoAppendsRepeatsNoLayerRow) {
  const fs::path out = work_dir() / "between";
  fs::remove_all(out);
  const std::string cmd = "profile default --threads 1 --runs 2 --warmup 0 --batch 1,2 --quiet -o " + out.string();
  ASSERT_EQ(run_joule(cmd).code, 0);
  const fs::path overall = out / "fashion_cnn_overall.csv", layers = out / "fashion_cnn_layers.csv";
  const auto o = profile::parse_csv(read_file(overall.string()));
  const auto l = profile::parse_csv(read_file(layers.string()));
  ASSERT_EQ(o.size(), 3u);
  // As killed after batch 2's layer rows: the overall CSV without its row.
  write_file_atomic(overall.string(), profile::csv_line(o[0]) + profile::csv_line(o[1]));
  ASSERT_EQ(run_joule(cmd).code, 0);
  EXPECT_EQ(profile::parse_csv(read_file(overall.string())).size(), 3u);
  const auto again = profile::parse_csv(read_file(layers.string()));
  EXPECT_EQ(again.size(), l.size()) << "batch 2's layer rows listed once";
}

// Crash-safe sweeps (issue 15): a 16-point sweep killed with SIGKILL at 20 random moments (seeded),
// resumed each time, then finished: every point in the overall CSV exactly once, every layer row
// once per point, no torn line in either file, profile.json readable.
TEST(ProfileCli, TwentyRandomKillsLoseAndRepeatNoPoint) {
  const fs::path out = work_dir() / "killed";
  fs::remove_all(out);
  const std::vector<std::string> args = {"profile", "default", "--threads", "1", "--runs", "200", "--warmup", "0",
                                         "--batch", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", "--quiet", "-o", out.string()};
  std::vector<int> finished;
  const int killed = joule::testing::run_joule_killed_repeatedly(args, 20, 15, 150, 600, &finished);
  for (int code : finished) ASSERT_EQ(code, 0);
  EXPECT_GE(killed, 5) << "runs should die mid-sweep: give the points more work";
  std::printf("%d of 20 runs killed mid-sweep\n", killed);
  std::string cmd;
  for (size_t i = 0; i < args.size(); ++i) cmd += (i > 0 ? " " : "") + args[i];
  const Result last = run_joule(cmd);
  ASSERT_EQ(last.code, 0) << last.out;

  const auto overall = profile::parse_csv(read_file((out / "fashion_cnn_overall.csv").string()));
  ASSERT_EQ(overall.size(), 17u) << "a header and 16 points";
  std::set<std::string> batches;
  for (size_t r = 1; r < overall.size(); ++r) {
    ASSERT_EQ(overall[r].size(), overall[0].size()) << "torn row " << r;
    batches.insert(overall[r][3]);
  }
  EXPECT_EQ(batches.size(), 16u) << "every batch once";
  const auto layers = profile::parse_csv(read_file((out / "fashion_cnn_layers.csv").string()));
  std::map<std::string, int> rows_per_batch;
  const auto batch_col = std::find(layers[0].begin(), layers[0].end(), "batch") - layers[0].begin();
  ASSERT_LT(static_cast<size_t>(batch_col), layers[0].size());
  for (size_t r = 1; r < layers.size(); ++r) {
    ASSERT_EQ(layers[r].size(), layers[0].size()) << "torn row " << r;
    ++rows_per_batch[layers[r][static_cast<size_t>(batch_col)]];
  }
  ASSERT_EQ(rows_per_batch.size(), 16u);
  for (const auto& [b, n] : rows_per_batch) EXPECT_EQ(n, rows_per_batch.begin()->second) << "batch " << b;
  const nlohmann::json j = nlohmann::json::parse(read_file((out / "profile.json").string()));
  EXPECT_TRUE(j.is_object() || j.is_array());
}
