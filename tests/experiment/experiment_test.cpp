// Experiments in this process: the experiment file, the results store, points run and resumed,
// the SVG plots and the HTML report.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sqlite3.h>

#include <atomic>
#include <filesystem>
#include <regex>
#include <thread>

#include "cli/cli_util.h"
#include "experiment/fixtures.h"
#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/experiment/runner.h"
#include "joule/experiment/serve.h"
#include "joule/report/plot.h"
#include "joule/report/report.h"

using namespace joule;
using namespace joule::experiment;
namespace fs = std::filesystem;

namespace {
fs::path dir() {
  static fs::path d = joule::testing::scratch_dir("experiment");
  return d;
}

std::string write(const std::string& name, const std::string& text) {
  const fs::path p = dir() / name;
  write_file_atomic(p.string(), text);
  return p.string();
}

// What the message of the BadInput `f` throws contains.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_user_error()) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

const std::string kTwoModels = R"(
name: small
models:
  - {name: a, path: a.onnx, calib: a_calib.npy}
  - {name: b, path: b.onnx, calib: b_calib.npy}
grid:
  config: {fp32: none, w8a8: {default: {weight: {format: int, bits: 8, symmetric: true, granularity: per_channel}, input: {format: int, bits: 8}}}}
  threads: [1, 2]
steps:
  - quantize: {config: "${config}", calib_samples: 2}
  - bench: {threads: "${threads}", warmup: 1, runs: 3}
)";

void write_models() {
  joule::testing::write_small_cnn(dir(), "a", 8, 12, 1);
  joule::testing::write_small_cnn(dir(), "b", 16, 10, 7);
}
}  // namespace

TEST(ExperimentSpec, GridExpandsWithValuesKeptAsTheyAre) {
  const std::string f = write("grid.yaml", R"(
name: g1
models: [default]
grid:
  threads: [1, 2]
  config: {fp32: none, inline: {default: {weight: {bits: 8}}}}
steps:
  - bench: {threads: "${threads}", runs: 3}
  - quantize: {config: "${config}"}
  - eval: {data: "${HOME}/x.npy"}
)");
  const ExperimentSpec s = read_experiment(f);
  EXPECT_EQ(s.name, "g1");
  EXPECT_EQ(s.grid.size(), 2u);
  EXPECT_EQ(s.grid[0].name, "threads");  // file order, not sorted
  const std::vector<Point> ps = expand(s);
  ASSERT_EQ(ps.size(), 4u);
  std::set<std::string> keys;
  for (auto& p : ps) keys.insert(p.key);
  EXPECT_EQ(keys.size(), 4u);
  EXPECT_TRUE(keys.count("model=default threads=2 config=inline"));
  const Point& p = ps[0];
  EXPECT_TRUE(p.steps[0].params["threads"].is_number_integer());  // "${threads}" alone: the number
  EXPECT_TRUE(ps[2].steps[1].params["config"].is_object() || ps[1].steps[1].params["config"].is_object());
  EXPECT_EQ(p.steps[2].params["data"].get<std::string>(), std::string(std::getenv("HOME")) + "/x.npy");
  // What a point runs is hashed: another grid value, another hash.
  EXPECT_NE(ps[0].config_hash(), ps[1].config_hash());
}

TEST(ExperimentSpec, BadFilesSayWhatAndWhere) {
  EXPECT_NE(error_of([&] { read_experiment(write("e1.yaml", "name: x\nmodels: [default]\nsteps: [bench]\nfoo: 1\n")); })
                .find("unknown key(s) foo"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_experiment(write("e2.yaml", "name: x\nmodels: [default]\nsteps: [train_it]\n")); })
                .find("unknown step 'train_it'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_experiment(write("e3.yaml", "name: x\nmodels: [default]\nsteps: [{bench: {threads: \"${nope}\"}}]\n")); })
                .find("'${nope}'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_experiment(write("e4.yaml", "models: [default]\nsteps: [bench]\n")); }).find("'name' is required"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_experiment(write("e5.yaml", "name: x\nmodels: [default, default]\nsteps: [bench]\n")); })
                .find("a second model named 'default'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_experiment((dir() / "missing.yaml").string()); }).find("cannot read"), std::string::npos);
  // ${NAME:-fallback}
  const ExperimentSpec s = read_experiment(
      write("e6.yaml", "name: x\nmodels: ['${JOULE_SURELY_UNSET_VAR:-default}']\nsteps: [bench]\n"));
  EXPECT_EQ(s.models[0].path, "default");
}

// One row per point however often it runs; metrics, layers and results read back as written.
void check_round_trip(const std::string& db) {
  {
    ResultsStore st(db);
    RunRow r;
    r.experiment = "e";
    r.point = "model=m threads=1";
    r.model = "m";
    stamp(r);
    const int64_t id = st.begin(r);
    EXPECT_EQ(r.attempts, 1);
    r.status = "failed";
    r.error = "boom";
    st.finish(r);
    RunRow again = r;
    again.id = 0;
    EXPECT_EQ(st.begin(again), id);  // the same row, one more attempt
    EXPECT_EQ(again.attempts, 2);
    again.status = "done";
    again.error.clear();
    again.metrics = {{"bench.latency_ms", 1.5}, {"eval.top1", 0.75}};
    again.layers = {{"conv", "Conv", "onednn", 1.0, 80}, {"relu", "Relu", "eltwise", 0.25, 20}};
    again.result = {{"bench", {{"x", 1}}}};
    st.finish(again);
  }
  ResultsStore st(db);  // reopened
  const auto runs = st.runs({"e", "", "", false, true});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, "done");
  EXPECT_EQ(runs[0].attempts, 2);
  EXPECT_DOUBLE_EQ(runs[0].metrics.at("eval.top1"), 0.75);
  ASSERT_EQ(runs[0].layers.size(), 2u);
  EXPECT_EQ(runs[0].layers[1].name, "relu");
  EXPECT_EQ(runs[0].result["bench"]["x"].get<int>(), 1);
  EXPECT_EQ(st.statuses("e").at("model=m threads=1").first, "done");
}

TEST(ResultsStore, PointsAreUpdatedNeverDuplicatedAndRoundTrip) {
  check_round_trip((dir() / "store.sqlite").string());
  // Not a store: an SQLite file with other tables, and a PostgreSQL URL (not built).
  const std::string other = (dir() / "other.sqlite").string();
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(other.c_str(), &h), SQLITE_OK);
  sqlite3_exec(h, "CREATE TABLE t(x)", nullptr, nullptr, nullptr);
  sqlite3_close(h);
  EXPECT_NE(error_of([&] { ResultsStore s(other); }).find("not a joule results store"), std::string::npos);
  EXPECT_NE(error_of([&] { ResultsStore s("postgresql://nobody@/nodb?host=/nonexistent"); }).find("cannot connect"),
            std::string::npos);
}

TEST(ExperimentRunner, RunsEveryPointOnceThenOnlyWhatChanged) {
  write_models();
  const std::string f = write("small.yaml", kTwoModels);
  ExperimentSpec spec = read_experiment(f);
  ExperimentOptions o;
  o.dir = (dir() / "runs_small").string();
  const ExperimentReport r1 = run_experiment(spec, o);
  EXPECT_EQ(r1.points, 8u);
  EXPECT_EQ(r1.done, 8u) << (r1.failures.empty() ? "" : r1.failures[0]);
  EXPECT_EQ(r1.failed, 0u);
  ResultsStore st(store_url(spec, o));
  for (const RunRow& r : st.runs({spec.name, "", "", false, false})) {
    EXPECT_GT(r.metrics.at("bench.latency_ms"), 0) << r.point;
    EXPECT_TRUE(fs::exists(fs::path(r.run_dir) / "result.json"));
    EXPECT_TRUE(fs::exists(fs::path(r.run_dir) / "config.json"));
    const auto env = nlohmann::json::parse(read_file((fs::path(r.run_dir) / "env.json").string()));
    EXPECT_EQ(env["inputs"]["model"]["checksum"].get<std::string>().rfind("fnv1a64:", 0), 0u);
    if (r.params["config"] == "w8a8") {
      EXPECT_GT(r.metrics.at("quantize.nodes_quantized"), 0) << r.point;
    } else {
      EXPECT_TRUE(r.result["quantize"].contains("skipped")) << r.point;
    }
  }
  // Again: nothing to do.
  const ExperimentReport r2 = run_experiment(spec, o);
  EXPECT_EQ(r2.skipped, 8u);
  EXPECT_EQ(r2.done, 0u);
  // The file changes what model b's points run: only those run again.
  std::string text = kTwoModels;
  text.replace(text.find("runs: 3"), 7, "runs: 4");
  spec = read_experiment(write("small.yaml", text));
  const ExperimentReport r3 = run_experiment(spec, o);
  EXPECT_EQ(r3.changed, 8u);  // every point's bench changed
  EXPECT_EQ(st.runs({spec.name, "", "", false, false}).size(), 8u);  // still one row per point
  const StatusReport s = experiment_status(spec, o);
  EXPECT_EQ(s.counts.at("done"), 8u);
}

TEST(ExperimentRunner, AFailingStepFailsItsPointWithTheReasonAndTheRestRun) {
  write_models();
  const std::string f = write("fail.yaml", R"(
name: failing
models:
  - {name: a, path: a.onnx, calib: a_calib.npy}
  - {name: gone, path: does_not_exist.onnx}
steps:
  - bench: {runs: 2, warmup: 0}
)");
  ExperimentOptions o;
  o.dir = (dir() / "runs_fail").string();
  const ExperimentReport r = run_experiment(read_experiment(f), o);
  EXPECT_EQ(r.done, 1u);
  ASSERT_EQ(r.failed, 1u);
  EXPECT_NE(r.failures[0].find("does_not_exist.onnx"), std::string::npos) << r.failures[0];
  // A parameter no step knows is refused when the point runs, naming the known ones.
  const std::string g = write("badparam.yaml", "name: bp\nmodels: [default]\nsteps: [{bench: {runz: 3}}]\n");
  const ExperimentReport b = run_experiment(read_experiment(g), o);
  ASSERT_EQ(b.failed, 1u);
  EXPECT_NE(b.failures[0].find("unknown parameter(s) runz"), std::string::npos) << b.failures[0];
  EXPECT_NE(b.failures[0].find("runs"), std::string::npos);
}

TEST(Plot, TextFitsAndLongLabelsKeepTheirFullName) {
  plot::BarChart c;
  c.title = "A long title that would not fit in the width of two small bars without the layout";
  const std::string longname = "/features/features.12/features.12.3/block/conv_pointwise_with_a_very_long_name/Conv";
  c.categories = {"a", longname};
  c.series = {{"int8", {}, {1.0, 2.0}, {}, {}}, {"fp8 <e4m3>", {}, {0.5, plot::kMissing}, {}, {}}};
  for (bool horizontal : {false, true}) {
    c.horizontal = horizontal;
    const std::string svg = plot::bars(c);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(svg, m, std::regex("width=\"([0-9]+)\"")));
    EXPECT_GE(std::stod(m[1]), plot::text_width(c.title, 14)) << "title clipped";
    EXPECT_NE(svg.find("<title>" + longname + "</title>"), std::string::npos);  // full name as tooltip
    EXPECT_NE(svg.find(plot::shorten_middle(longname, c.max_label)), std::string::npos);
    EXPECT_NE(svg.find("fp8 &lt;e4m3&gt;"), std::string::npos);  // escaped
    EXPECT_EQ(svg.find("fp8 <e4m3>"), std::string::npos);
  }
  EXPECT_EQ(plot::shorten_middle("abc", 10), "abc");
  EXPECT_EQ(plot::shorten_middle("abcdefghijkl", 7), "abc\u2026jkl");
}

TEST(Plot, ParetoFrontKeepsOnlyUndominatedPoints) {
  // (latency, accuracy): lower latency and higher accuracy are better.
  const std::vector<double> x = {1, 2, 3, 2.5, 1.5, plot::kMissing};
  const std::vector<double> y = {0.5, 0.8, 0.9, 0.7, 0.5, 1.0};
  EXPECT_EQ(plot::pareto_front(x, y, true, true), (std::vector<size_t>{0, 1, 2}));
}

TEST(Report, HtmlIsSelfContainedAndShowsTheRuns) {
  write_models();
  const std::string f = write("rep.yaml", R"(
name: rep
models:
  - {name: a, path: a.onnx, calib: a_calib.npy}
grid:
  threads: [1, 2]
steps:
  - profile: {threads: "${threads}", runs: 3, warmup: 1}
)");
  ExperimentOptions o;
  o.dir = (dir() / "runs_rep").string();
  ASSERT_EQ(run_experiment(read_experiment(f), o).done, 2u);
  report::ReportOptions ro;
  ro.store = (fs::path(o.dir) / "results.sqlite").string();
  ro.experiment = "rep";
  const std::string html = report::report_html(ro);
  EXPECT_NE(html.find("joule experiment rep"), std::string::npos);
  EXPECT_NE(html.find("profile.latency_ms against threads"), std::string::npos);  // the sweep curve
  EXPECT_NE(html.find("the 15 slowest layers"), std::string::npos);               // per-layer bars
  EXPECT_NE(html.find("conv (FusedConv, "), std::string::npos);  // Conv+Relu fused, with its algorithm
  // The graph coloured by time: the conv node carries its time.
  EXPECT_NE(html.find("Graph coloured by per-layer time"), std::string::npos);
  EXPECT_NE(html.find("conv: FusedConv"), std::string::npos);
  // Nothing fetched: no URL but XML namespace names.
  EXPECT_EQ(std::regex_replace(html, std::regex("xmlns(:\\w+)?=\"http[^\"]*\""), "").find("http"), std::string::npos);
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  // From the run folders instead of the store: the same runs.
  report::ReportOptions rd;
  for (const auto& e : fs::directory_iterator(o.dir))
    if (e.is_directory()) rd.run_dirs.push_back(e.path().string());
  ASSERT_EQ(rd.run_dirs.size(), 2u);
  EXPECT_EQ(report::report_runs(rd).size(), 2u);
  EXPECT_NE(report::report_html(rd).find("the 15 slowest layers"), std::string::npos);
  ro.experiment = "nope";
  EXPECT_NE(error_of([&] { report::report_html(ro); }).find("no runs of experiment 'nope'"), std::string::npos);
}

TEST(Dashboard, ServesThePageAndTheJsonApiUntilCancelled) {
  write_models();
  const std::string f = write("dash.yaml", "name: dash\nmodels: [{name: a, path: a.onnx}]\ngrid: {threads: [1, 2]}\n"
                                           "steps: [{bench: {threads: \"${threads}\", runs: 2, warmup: 0}}]\n");
  ExperimentOptions o;
  o.dir = (dir() / "runs_dash").string();
  ASSERT_EQ(run_experiment(read_experiment(f), o).done, 2u);
  const std::string db = store_url(read_experiment(f), o);

  std::atomic<bool> stop{false};
  std::atomic<int> port{0};
  api::Hooks hooks;
  hooks.cancelled = [&] { return stop.load(); };
  std::thread t([&] {
    ServeOptions so;
    so.store = db;
    so.port = 0;
    try {
      serve(so, hooks, [&](int p) { port = p; });
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::Cancelled);
    }
  });
  for (int i = 0; i < 100 && port == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_GT(port.load(), 0);
  httplib::Client c("127.0.0.1", port);
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<title>joule dashboard</title>"), std::string::npos);
  auto runs = c.Get("/api/runs?experiment=dash");
  ASSERT_TRUE(runs);
  const auto rj = nlohmann::json::parse(runs->body);
  ASSERT_EQ(rj.size(), 2u);
  EXPECT_FALSE(rj[0].contains("result"));  // the list is light; /api/runs/ID has it all
  auto one = c.Get("/api/runs/" + std::to_string(rj[0]["id"].get<int64_t>()));
  ASSERT_TRUE(one);
  EXPECT_TRUE(nlohmann::json::parse(one->body)["result"].contains("bench"));
  auto missing = c.Get("/api/runs/99999");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  auto exps = c.Get("/api/experiments");
  ASSERT_TRUE(exps);
  EXPECT_EQ(nlohmann::json::parse(exps->body)["experiments"][0]["done"].get<int>(), 2);
  auto rep = c.Get("/report?experiment=dash");
  ASSERT_TRUE(rep);
  EXPECT_NE(rep->body.find("joule experiment dash"), std::string::npos);
  stop = true;
  t.join();
  // A store that cannot be opened is refused before listening.
  ServeOptions bad;
  bad.store = "/proc/no/such/store.sqlite";
  EXPECT_NE(error_of([&] { serve(bad, hooks); }).find("cannot open the results store"), std::string::npos);
}

// With a PostgreSQL server (ctest starts one: scripts/pg_test_server.sh, JOULE_TEST_PG_URL).
std::string pg_url() {
  const char* u = std::getenv("JOULE_TEST_PG_URL");
  return u ? u : "";
}

TEST(Postgres, StoreRoundTrip) {
  if (pg_url().empty()) GTEST_SKIP() << "JOULE_TEST_PG_URL not set (ctest -R postgres starts a server)";
  check_round_trip(pg_url());
  ResultsStore st(pg_url());
  EXPECT_TRUE(st.postgres());
}

TEST(Postgres, TheSameExperimentGivesTheSameRowsAsSqlite) {
  if (pg_url().empty()) GTEST_SKIP() << "JOULE_TEST_PG_URL not set (ctest -R postgres starts a server)";
  write_models();
  const ExperimentSpec spec = read_experiment(write("pg.yaml", std::regex_replace(kTwoModels, std::regex("small"), "pgexp")));
  ExperimentOptions lite, pg;
  lite.dir = (dir() / "runs_pg_sqlite").string();
  pg.dir = (dir() / "runs_pg").string();
  pg.store = pg_url();
  ASSERT_EQ(run_experiment(spec, lite).done, 8u);
  ASSERT_EQ(run_experiment(spec, pg).done, 8u);
  EXPECT_EQ(run_experiment(spec, pg).skipped, 8u);  // resumable there too
  auto rows = [&](const std::string& url) {
    std::map<std::string, std::pair<std::string, std::set<std::string>>> out;
    for (const RunRow& r : ResultsStore(url).runs({"pgexp", "", "", false, true})) {
      std::set<std::string> names;
      for (auto& [k, v] : r.metrics) names.insert(k);
      out[r.point] = {r.status + " " + r.config_hash + " " + r.command, names};
    }
    return out;
  };
  EXPECT_EQ(rows(store_url(spec, lite)), rows(pg_url()));
  // The report and the dashboard read it the same way.
  report::ReportOptions ro;
  ro.store = pg_url();
  ro.experiment = "pgexp";
  EXPECT_NE(report::report_html(ro).find("joule experiment pgexp"), std::string::npos);
  EXPECT_EQ(api_runs(pg_url(), "pgexp", "done", "").size(), 8u);
}

TEST(Slurm, TasksThatRecordNothingAreRetriedThenReportedNeverLost) {
  if (!std::getenv("SLURM_CONF")) GTEST_SKIP() << "SLURM_CONF not set (ctest -R slurm starts a cluster)";
  write_models();
  const ExperimentSpec spec = read_experiment(write("lost.yaml", "name: lost\nmodels: [{name: a, path: a.onnx}]\n"
                                                               "grid: {threads: [1, 2]}\nslurm: {retries: 1}\n"
                                                               "steps: [{bench: {threads: \"${threads}\", runs: 2}}]\n"));
  ExperimentOptions o;
  o.dir = (dir() / "runs_lost").string();
  o.executor = "slurm";
  o.worker = "/bin/false";  // every task exits without recording its point
  const ExperimentReport r = run_experiment(spec, o);
  EXPECT_EQ(r.done, 0u);
  ASSERT_EQ(r.failed, 2u);
  EXPECT_NE(r.failures[0].find("ended without recording it, 2 time(s)"), std::string::npos) << r.failures[0];
  EXPECT_TRUE(fs::exists(fs::path(o.dir) / "slurm" / "submit_1.sh"));  // the retry
  ResultsStore st(store_url(spec, o));
  for (const RunRow& x : st.runs({"lost", "", "", false, false})) EXPECT_EQ(x.status, "failed");
}

TEST(ExperimentRunner, APruneStepHandsTheSmallerModelOn) {
  write_models();
  const ExperimentSpec spec = read_experiment(write("prune.yaml", R"(
name: pruned
models: [{name: b, path: b.onnx}]
grid: {ratio: [0, 0.5]}
steps:
  - prune: {ratio: "${ratio}", structured: true}
  - bench: {runs: 2, warmup: 0}
)"));
  ExperimentOptions o;
  o.dir = (dir() / "runs_prune").string();
  ASSERT_EQ(run_experiment(spec, o).done, 2u);
  std::map<std::string, double> params;
  for (const RunRow& r : ResultsStore(store_url(spec, o)).runs({"pruned", "", "", false, false}))
    params[r.params["ratio"]] = r.metrics.at("prune.params_after");
  EXPECT_LT(params.at("0.5"), params.at("0"));
}
