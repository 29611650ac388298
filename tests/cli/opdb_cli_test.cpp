// joule opdb (sweep, add, stats, export, coverage) and joule predict, as a user runs them.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "joule/core/file_util.h"
#include "joule/profile/profiler.h"

using joule::testing::run_joule;

TEST(OpdbCli, SweepAddPredictCoverageAndErrors) {
  const auto dir = joule::testing::scratch_dir("opdb_cli");
  const std::string db = (dir / "ops.sqlite").string(), cfg = (dir / "tiny.yaml").string();
  joule::write_file_atomic(cfg, "quick:\n  - op: Conv\n    channels: [8, 16]\n    size: 8\n  - op: Relu\n    channels: 8\n    size: [4, 8]\n");
  const std::string fast = " --runs 3 --min-time 0 --sample-ms 0 --db " + db;

  auto r = run_joule("opdb sweep " + cfg + " --stage quick --format json" + fast);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["points"], 4);
  const size_t swept = j["rows"].get<size_t>();
  EXPECT_GE(swept, 8u);  // 4 points, 2 regimes each, at least one node per point

  // Nothing of the bundled model's own layers yet: coverage says what to sweep next.
  r = run_joule("opdb coverage default --db " + db);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("to pass 90% exact, sweep or add: joule.FusedConv"), std::string::npos) << r.out;

  r = run_joule("opdb add default" + fast);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("measured"), std::string::npos) << r.out;

  r = run_joule("predict default --format json --db " + db);
  ASSERT_EQ(r.code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["latency_ms"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(j["coverage"]["exact"]["time_pct"].get<double>(), 100.0);
  double sum = 0;
  for (auto& l : j["layers"]) {
    EXPECT_EQ(l["source"], "exact");
    sum += l["latency_ms"].get<double>();
  }
  EXPECT_NEAR(sum, j["latency_ms"].get<double>(), 1e-9);
  EXPECT_NE(j["energy_source"].get<std::string>().find("estimate"), std::string::npos);

  r = run_joule("opdb stats --format json --db " + db);
  ASSERT_EQ(r.code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["rows"].get<size_t>(), swept);
  EXPECT_TRUE(j["origins"].contains("sweep"));
  EXPECT_TRUE(j["origins"].contains("model:fashion_cnn"));

  r = run_joule("opdb export --csv --db " + db);
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("op_type,attrs,inputs", 0), 0u);

  // Validation measures the model in rounds and compares with the best.
  r = run_joule("predict default --validate --runs 3 --min-time 0 --rounds 2 --format json --db " + db);
  ASSERT_EQ(r.code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["models"].size(), 1u);
  EXPECT_EQ(j["rounds"], 2);
  const auto& v = j["models"][0];
  ASSERT_EQ(v["round_ms"].size(), 2u);
  EXPECT_GT(v["measured_ms"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(v["measured_ms"].get<double>(),
                   std::min(v["round_ms"][0].get<double>(), v["round_ms"][1].get<double>()));

  // The profiler appends what it measured inside the model, one row per distinct layer.
  r = run_joule("profile default --threads 1 --runs 3 --warmup 1 --format json --opdb " + db);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_GT(nlohmann::json::parse(r.out)["opdb_rows"].get<int>(), 3);
  r = run_joule("opdb stats --format json --db " + db);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_GT(nlohmann::json::parse(r.out)["regimes"]["in-model"].get<int>(), 3);
  r = run_joule("profile default --threads 1 --batch 1,2 --opdb " + db);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--opdb records one configuration"), std::string::npos) << r.out;

  // Errors: one line, exit 2.
  r = run_joule("predict default --db " + (dir / "missing.sqlite").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no operator database there"), std::string::npos) << r.out;
  joule::write_file_atomic(cfg, "quick:\n  - op: Conv\n    chanels: 8\n");
  r = run_joule("opdb sweep " + cfg + fast);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("tiny.yaml:2: 'chanels' is not a parameter of a Conv sweep"), std::string::npos) << r.out;
}

// Crash-safe operator sweeps (issue 15): a 12-point sweep (24 rows: two cache regimes) killed with
// SIGKILL at 20 seeded random moments, resumed each time, then finished: every row exactly once,
// the same rows as an uninterrupted sweep, and SQLite's integrity check clean.
TEST(OpdbCli, TwentyRandomKillsLoseAndRepeatNoRow) {
  const auto dir = joule::testing::scratch_dir("opdb_killed");
  const std::string db = (dir / "ops.sqlite").string(), cfg = (dir / "relu.yaml").string();
  joule::write_file_atomic(cfg, "quick:\n  - op: Relu\n    channels: [8, 16, 32, 64]\n    size: [8, 16, 32]\n");
  // Each row measures for at least 0.5 s: 12 s in all, more than the 20 runs get done before
  // their kill, so that every kill lands mid-sweep.
  const std::vector<std::string> args = {"opdb", "sweep", cfg, "--stage", "quick", "--runs", "20", "--min-time", "0.5",
                                         "--sample-ms", "1", "--db", db};
  std::vector<int> finished;
  const int killed = joule::testing::run_joule_killed_repeatedly(args, 20, 17, 200, 1200, &finished);
  for (int code : finished) ASSERT_EQ(code, 0);
  EXPECT_GE(killed, 15) << "runs should die mid-sweep: give the points more work";
  std::printf("%d of 20 runs killed mid-sweep\n", killed);
  std::string cmd;
  for (const std::string& a : args) cmd += a + " ";
  auto r = run_joule(cmd);
  ASSERT_EQ(r.code, 0) << r.out;

  auto rows_of = [](const std::string& db_path) {
    auto e = run_joule("opdb export --csv --db " + db_path);
    EXPECT_EQ(e.code, 0) << e.out;
    const auto csv = joule::profile::parse_csv(e.out);
    const auto col = [&](const char* name) {
      return static_cast<size_t>(std::find(csv[0].begin(), csv[0].end(), name) - csv[0].begin());
    };
    std::multiset<std::tuple<std::string, std::string, std::string, std::string, std::string>> keys;
    for (size_t i = 1; i < csv.size(); ++i) {
      EXPECT_EQ(csv[i].size(), csv[0].size()) << "row " << i;
      keys.emplace(csv[i][col("op_type")], csv[i][col("inputs")], csv[i][col("regime")], csv[i][col("threads")],
                   csv[i][col("algorithm")]);
    }
    return keys;
  };
  const auto keys = rows_of(db);
  EXPECT_EQ(keys.size(), 24u);
  EXPECT_EQ(std::set(keys.begin(), keys.end()).size(), keys.size()) << "a row measured twice";

  const std::string clean = (dir / "clean.sqlite").string();
  std::string clean_cmd;
  for (const std::string& a : args) clean_cmd += (a == db ? clean : a == "0.5" ? "0" : a) + " ";  // (keys only)
  ASSERT_EQ(run_joule(clean_cmd).code, 0);
  EXPECT_EQ(keys, rows_of(clean)) << "the killed and resumed sweep holds other rows than an uninterrupted one";

  FILE* p = popen(("sqlite3 " + db + " 'PRAGMA integrity_check'").c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[256] = {};
  const size_t n = fread(buf, 1, sizeof buf - 1, p);
  pclose(p);
  EXPECT_EQ(std::string(buf, n), "ok\n");
}
