// joule experiment / report / --store as a user runs them: an experiment killed with SIGKILL half
// way resumes and ends with every point stored once; one-line errors with exit code 2.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/cli_util.h"
#include "experiment/fixtures.h"
#include "joule/core/file_util.h"

namespace fs = std::filesystem;
using joule::testing::CliResult;

namespace {
CliResult joule_cmd(const std::string& args) { return joule::testing::run_joule(args); }

fs::path dir() {
  static fs::path d = joule::testing::scratch_dir("experiment_cli");
  return d;
}

// Rows of `sql`'s first column as integers (the store read as any SQLite client would).
std::vector<int64_t> query(const std::string& db, const std::string& sql) {
  std::vector<int64_t> out;
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(h);
    return out;
  }
  sqlite3_busy_timeout(h, 5000);
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr) == SQLITE_OK)
    while (sqlite3_step(s) == SQLITE_ROW) out.push_back(sqlite3_column_int64(s, 0));
  sqlite3_finalize(s);
  sqlite3_close(h);
  return out;
}

// Six models (the bundled CNN and five small ones) x four configs x two thread counts.
std::string six_by_four_by_two() {
  std::string models = "  - {name: fashion_cnn, path: default, calib: " + std::string(JOULE_SOURCE_DIR) +
                       "/models/fashion_cnn_sample.npy}\n";
  const int64_t channels[] = {4, 8, 12, 16, 24}, sizes[] = {8, 10, 12, 14, 16};
  for (int i = 0; i < 5; ++i) {
    const std::string name = "cnn" + std::to_string(i);
    joule::testing::write_small_cnn(dir(), name, channels[i], sizes[i], 10 + 7 * i);
    models += "  - {name: " + name + ", path: " + name + ".onnx, calib: " + name + "_calib.npy}\n";
  }
  const std::string text = "name: six\nmodels:\n" + models + R"(grid:
  config:
    fp32: none
    w8a8: )" + std::string(JOULE_SOURCE_DIR) + R"(/examples/quant/w8a8.yaml
    w4a8: {default: {weight: {format: int, bits: 4, symmetric: true, granularity: per_channel}, input: {format: int, bits: 8}}}
    fp8: )" + std::string(JOULE_SOURCE_DIR) + R"(/examples/quant/fp8.yaml
  threads: [1, 2]
steps:
  - quantize: {config: "${config}", calib_samples: 4}
  - bench: {threads: "${threads}", warmup: 1, runs: 5}
)";
  const std::string f = (dir() / "six.yaml").string();
  joule::write_file_atomic(f, text);
  return f;
}
}  // namespace

TEST(ExperimentCli, KilledHalfWayResumesWithEveryPointStoredOnce) {
  const std::string f = six_by_four_by_two();
  const std::string runs = (dir() / "runs_six").string(), db = runs + "/results.sqlite";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string bin = std::string(JOULE_BINARY_DIR) + "/joule";
    freopen("/dev/null", "w", stdout);
    execl(bin.c_str(), bin.c_str(), "experiment", "run", f.c_str(), "--dir", runs.c_str(), "--quiet", nullptr);
    _exit(127);
  }
  // Kill it (SIGKILL: no clean-up) once a quarter of the points are done.
  const auto t0 = std::chrono::steady_clock::now();
  size_t done = 0;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(240)) {
    const auto n = query(db, "SELECT count(*) FROM runs WHERE status='done'");
    done = n.empty() ? 0 : static_cast<size_t>(n[0]);
    if (done >= 12) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFSIGNALED(st));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the point's child dies with it
  const auto before = query(db, "SELECT count(*) FROM runs WHERE status='done'");
  ASSERT_FALSE(before.empty());
  ASSERT_GE(before[0], 12);
  ASSERT_LT(before[0], 48) << "finished before it was killed: give the points more work";
  const auto finished_before = query(db, "SELECT id FROM runs WHERE status='done' ORDER BY id");

  CliResult s = joule_cmd("experiment status " + f + " --dir " + runs + " --format json");
  ASSERT_EQ(s.code, 0) << s.out;
  auto sj = nlohmann::json::parse(s.out);
  EXPECT_EQ(sj["points"].get<int>(), 48);
  EXPECT_EQ(sj["counts"]["done"].get<int64_t>(), before[0]);
  EXPECT_EQ(sj["counts"]["running"].get<int>(), 0);  // the killed point is not left "running"

  CliResult r = joule_cmd("experiment run " + f + " --dir " + runs + " --format json --quiet");
  ASSERT_EQ(r.code, 0) << r.out;
  auto rj = nlohmann::json::parse(r.out);
  EXPECT_EQ(rj["skipped"].get<int64_t>(), before[0]);
  EXPECT_EQ(rj["done"].get<int64_t>(), 48 - before[0]);
  EXPECT_EQ(rj["failed"].get<int>(), 0);
  // All 48 in the store, none twice, and the points finished before the kill were not run again.
  EXPECT_EQ(query(db, "SELECT count(*) FROM runs")[0], 48);
  EXPECT_EQ(query(db, "SELECT count(DISTINCT point) FROM runs WHERE status='done'")[0], 48);
  for (int64_t id : finished_before)
    EXPECT_EQ(query(db, "SELECT attempts FROM runs WHERE id=" + std::to_string(id))[0], 1) << id;
  EXPECT_LE(query(db, "SELECT max(attempts) FROM runs")[0], 2);
  EXPECT_EQ(query(db, "SELECT count(*) FROM metrics WHERE name='bench.latency_ms' AND value > 0")[0], 48);

  // The report of it: one HTML file.
  const std::string html = (dir() / "six.html").string();
  CliResult rep = joule_cmd("report --store " + db + " --experiment six -o " + html);
  ASSERT_EQ(rep.code, 0) << rep.out;
  const std::string page = joule::read_file(html);
  EXPECT_NE(page.find("bench.latency_ms by model and config"), std::string::npos);
  EXPECT_NE(page.find("bench.latency_ms against threads"), std::string::npos);
}

TEST(ExperimentCli, JobsRunPointsInParallelProcesses) {
  joule::testing::write_small_cnn(dir(), "j", 8, 10, 3);
  const std::string f = (dir() / "jobs.yaml").string();
  joule::write_file_atomic(f, "name: jobs\nmodels: [{name: j, path: j.onnx}]\ngrid: {threads: [1, 2], runs: [3, 4, 5]}\n"
                              "steps: [{bench: {threads: \"${threads}\", runs: \"${runs}\", warmup: 0}}]\n");
  const std::string runs = (dir() / "runs_jobs").string();
  CliResult r = joule_cmd("experiment run " + f + " --dir " + runs + " --jobs 2 --format json --quiet");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["done"].get<int>(), 6);
  EXPECT_EQ(query(runs + "/results.sqlite", "SELECT count(*) FROM runs WHERE status='done'")[0], 6);
  // The runs' bench results carry the grid's run counts.
  EXPECT_EQ(query(runs + "/results.sqlite", "SELECT count(*) FROM runs WHERE json_extract(result, '$.bench.runs') = "
                                            "CAST(json_extract(params, '$.runs') AS INTEGER)")[0],
            6);
}

TEST(ExperimentCli, StoreRecordsCommandsAndErrorsAreOneLine) {
  const std::string db = (dir() / "cmds.sqlite").string();
  CliResult b = joule_cmd("bench default --runs 3 --warmup 0 --threads 1 --store " + db);
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_NE(b.out.find("recorded as run 1 in"), std::string::npos) << b.out;
  CliResult p = joule_cmd("profile default --runs 3 --warmup 0 --threads 1 --quiet --store " + db);
  ASSERT_EQ(p.code, 0) << p.out;
  EXPECT_EQ(query(db, "SELECT count(*) FROM runs WHERE experiment='' AND status='done'")[0], 2);
  EXPECT_GT(query(db, "SELECT count(*) FROM layers")[0], 3);
  CliResult rep = joule_cmd("report --store " + db + " -o " + (dir() / "cmds.html").string());
  ASSERT_EQ(rep.code, 0) << rep.out;

  const std::string bad = (dir() / "bad.yaml").string();
  joule::write_file_atomic(bad, "name: bad\nmodels: [default]\nsteps: [{bench: {runs: 3}}, frobnicate]\n");
  CliResult e = joule_cmd("experiment run " + bad);
  EXPECT_EQ(e.code, 2);
  EXPECT_NE(e.out.find("unknown step 'frobnicate'"), std::string::npos) << e.out;
  EXPECT_EQ(std::count(e.out.begin(), e.out.end(), '\n'), 1) << e.out;
  CliResult pg = joule_cmd("bench default --runs 1 --store 'postgresql://nobody@/nodb?host=/nonexistent'");
  EXPECT_EQ(pg.code, 2);
  EXPECT_NE(pg.out.find("cannot connect to the results store (PostgreSQL)"), std::string::npos) << pg.out;
  CliResult none = joule_cmd("report -o " + (dir() / "x.html").string());
  EXPECT_EQ(none.code, 2);
  EXPECT_FALSE(fs::exists(dir() / "x.html"));
}

// With a single-node SLURM cluster and a PostgreSQL server (ctest starts both:
// scripts/slurm_test_cluster.sh, scripts/pg_test_server.sh).
TEST(SlurmCli, TheSameExperimentThroughSlurmIntoPostgresGivesTheSameRows) {
  const char* pg = std::getenv("JOULE_TEST_PG_URL");
  if (!pg || !std::getenv("SLURM_CONF")) GTEST_SKIP() << "JOULE_TEST_PG_URL / SLURM_CONF not set (ctest -R slurm starts both)";
  const std::string f = six_by_four_by_two();
  const std::string local = (dir() / "runs_local").string(), cluster = (dir() / "runs_slurm").string();
  CliResult l = joule_cmd("experiment run " + f + " --dir " + local + " --jobs 2 --quiet --format json");
  ASSERT_EQ(l.code, 0) << l.out;
  CliResult s = joule_cmd("experiment run " + f + " --dir " + cluster + " --executor slurm --store '" + pg +
                          "' --quiet --format json");
  ASSERT_EQ(s.code, 0) << s.out;
  EXPECT_EQ(nlohmann::json::parse(s.out)["done"].get<int>(), 48);
  // One task per point, each with its SLURM log.
  size_t logs = 0;
  for (const auto& e : fs::directory_iterator(fs::path(cluster) / "slurm")) logs += e.path().extension() == ".out";
  EXPECT_EQ(logs, 48u);
  // The rows: the same points, statuses, what they ran and metrics, in both stores.
  auto rows = [&](const std::string& store) {
    CliResult st = joule_cmd("experiment status " + f + " --store '" + store + "' --format json");
    EXPECT_EQ(st.code, 0) << st.out;
    std::map<std::string, std::string> out;
    const nlohmann::json j = nlohmann::json::parse(st.out);  // alive through the loop
    for (const auto& r : j["rows"]) out[r["point"]] = r["status"];
    return out;
  };
  const auto a = rows(local + "/results.sqlite"), b = rows(pg);
  EXPECT_EQ(a.size(), 48u);
  EXPECT_EQ(a, b);
  // Again: nothing left to run there.
  CliResult again = joule_cmd("experiment run " + f + " --dir " + cluster + " --executor slurm --store '" + pg +
                              "' --quiet --format json");
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_EQ(nlohmann::json::parse(again.out)["skipped"].get<int>(), 48);
}
