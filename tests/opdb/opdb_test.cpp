// The operator store (SQLite), measuring one node in isolation, filling the store from a
// session and from sweep configs, and the predictor's three sources.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "cli/cli_util.h"
#include "graph_builder.h"
#include "test_tensors.h"
#include "joule/api/prepare.h"
#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/opdb/collect.h"
#include "joule/predict/predictor.h"
#include "joule/profile/cpu_peak.h"
#include "joule/runtime/inputs.h"

namespace fs = std::filesystem;
using namespace joule;

namespace {
opdb::Row row(const std::string& op, int64_t n, double ms, const std::string& regime = "reused",
              std::vector<std::string> origins = {"sweep"}) {
  opdb::Row r;
  r.op.op_type = op;
  r.op.inputs = {"float32[1," + std::to_string(n) + "]"};
  r.op.outputs = r.op.inputs;
  r.algorithm = "simd";
  r.regime = regime;
  r.cpu = opdb::this_cpu();
  r.isa = opdb::this_isa();
  r.joule_version = JOULE_VERSION;
  r.median_ms = r.trimmed_mean_ms = ms;
  r.runs = 5;
  r.flops = static_cast<double>(n);
  r.bytes = 8.0 * static_cast<double>(n);
  r.origins = std::move(origins);
  return r;
}

// Conv + Relu, MaxPool, flatten, Gemm: after the default passes a fused conv, a pool and a gemm.
ir::Graph small_cnn() {
  return joule::testing::GraphBuilder()
      .input("x", DType::Float32, {1, 8, 16, 16})
      .init("w", joule::testing::random_tensor({16, 8, 3, 3}, 1, -0.2f, 0.2f))
      .init("b", joule::testing::random_tensor({16}, 2))
      .init("shape", Tensor::from_vector<int64_t>({1, -1}, {2}))
      .init("fw", joule::testing::random_tensor({10, 16 * 8 * 8}, 3, -0.05f, 0.05f))
      .init("fb", joule::testing::random_tensor({10}, 4))
      .node("Conv", {"x", "w", "b"}, {"c"}, {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Relu", {"c"}, {"r"})
      .node("MaxPool", {"r"}, {"p"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}})
      .node("Reshape", {"p", "shape"}, {"f"})
      .node("Gemm", {"f", "fw", "fb"}, {"y"}, {{"transB", int64_t{1}}})
      .output("y")
      .build();
}

opdb::CollectOptions fast_collect(const std::string& origin) {
  opdb::CollectOptions c;
  c.measure.runs = 3;
  c.measure.warmup = 1;
  c.measure.min_time_s = 0;
  c.measure.sample_ms = 0;
  c.measure.retries = 0;
  c.origin = origin;
  return c;
}
}  // namespace

TEST(OpdbStore, PutFindUpsertAndOrigins) {
  const fs::path dir = joule::testing::scratch_dir("opdb_store");
  const std::string path = (dir / "sub" / "db.sqlite").string();  // the folder is created
  {
    opdb::Store db(path);
    EXPECT_EQ(db.count(), 0u);
    db.put(row("Relu", 100, 0.5));
    db.put(row("Relu", 100, 0.5, "fresh"));
    db.put(row("Relu", 200, 0.9));
    EXPECT_EQ(db.count(), 3u);
    // Same key again: replaced, origins merged.
    opdb::Row again = row("Relu", 100, 0.25, "reused", {"model:a"});
    again.energy_j = 1e-6;
    again.energy_source = "estimate:x";
    db.put(again);
    EXPECT_EQ(db.count(), 3u);
  }
  opdb::Store db(path);  // persisted
  auto r = db.find(row("Relu", 100, 0).op, "simd", 1, "fp32", "reused", opdb::this_cpu(), opdb::this_isa(), JOULE_VERSION);
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->median_ms, 0.25);
  ASSERT_TRUE(r->energy_j);
  EXPECT_DOUBLE_EQ(*r->energy_j, 1e-6);
  EXPECT_EQ(r->origins, (std::vector<std::string>{"model:a", "sweep"}));
  EXPECT_FALSE(db.find(row("Relu", 100, 0).op, "simd", 2, "fp32", "reused", opdb::this_cpu(), opdb::this_isa(), JOULE_VERSION));
  EXPECT_FALSE(r->timestamp.empty());

  opdb::Filter f;
  f.regime = "fresh";
  EXPECT_EQ(db.rows(f).size(), 1u);
  // Leave-one-out: a row only model:b made is hidden; one that model:b shares with the sweep is not.
  db.put(row("Relu", 300, 1.0, "reused", {"model:b"}));
  db.put(row("Relu", 200, 0.9, "reused", {"model:b"}));  // adds model:b to a sweep row
  opdb::Filter loo;
  loo.exclude_origins = {"model:b"};
  EXPECT_EQ(db.rows().size(), 4u);
  EXPECT_EQ(db.rows(loo).size(), 3u);
}

TEST(OpdbStore, TransactionRollsBackUnlessCommitted) {
  const fs::path dir = joule::testing::scratch_dir("opdb_tx");
  opdb::Store db((dir / "db.sqlite").string());
  {
    opdb::Store::Transaction t(db);
    db.put(row("Relu", 1, 1));
  }
  EXPECT_EQ(db.count(), 0u);
  {
    opdb::Store::Transaction t(db);
    db.put(row("Relu", 1, 1));
    t.commit();
  }
  EXPECT_EQ(db.count(), 1u);
}

TEST(OpdbStore, RefusesOtherDatabasesAndNewerSchemas) {
  const fs::path dir = joule::testing::scratch_dir("opdb_refuse");
  const std::string other = (dir / "other.sqlite").string(), newer = (dir / "newer.sqlite").string();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(other.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE t(x)", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  ASSERT_EQ(sqlite3_open(newer.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  try {
    opdb::Store s(other);
    FAIL() << "opened a foreign database";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a joule operator database"), std::string::npos) << e.what();
  }
  try {
    opdb::Store s(newer);
    FAIL() << "opened a newer schema";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
  }
  write_file_atomic((dir / "text.sqlite").string(), "this is not sqlite at all, just some text long enough");
  EXPECT_THROW(opdb::Store((dir / "text.sqlite").string()), Error);
}

TEST(OpdbMeasure, KeyIsolationAndTheRegimes) {
  ir::Graph g = small_cnn();
  api::Prepared p = api::prepare(g, api::PrepareOptions::with_threads(1));
  const runtime::Session& s = *p.session;
  const ir::Node* conv = nullptr;
  for (size_t i = 0; i < s.num_steps(); ++i)
    if (s.step_node(i).op_type == "FusedConv") conv = &s.step_node(i);
  ASSERT_NE(conv, nullptr);
  const opdb::OpKey k = opdb::op_key(s.graph(), *conv);
  EXPECT_EQ(k.op_type, "joule.FusedConv");
  ASSERT_EQ(k.inputs.size(), 3u);
  EXPECT_EQ(k.inputs[1].rfind("const float32[16,8,3,3]", 0), 0u) << k.inputs[1];
  EXPECT_EQ(k.inputs[0].rfind("const", 0), std::string::npos);
  EXPECT_EQ(opdb::precision_of(k, "onednn"), "fp32");
  EXPECT_EQ(opdb::precision_of(k, "onednn_bf16"), "bf16");
  EXPECT_EQ(k.attrs["activation"], "\"Relu\"");

  const ir::Graph one = opdb::isolate(s.graph(), *conv);
  EXPECT_EQ(one.nodes.size(), 1u);
  EXPECT_EQ(one.inputs.size(), 1u);
  EXPECT_EQ(one.initializers.size(), 2u);
  EXPECT_EQ(opdb::op_key(one, *one.nodes[0]).text(), k.text());  // the isolated node has the same key

  opdb::MeasureOptions mo;
  mo.runs = 4;
  mo.min_time_s = 0;
  mo.sample_ms = 0;
  mo.retries = 0;
  const std::vector<opdb::Row> rows = opdb::measure_node(s.graph(), *conv, "", mo);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].regime, "reused");
  EXPECT_EQ(rows[1].regime, "fresh");
  EXPECT_EQ(rows[2].regime, "cold");  // caches flushed before each call: weights from memory
  for (const opdb::Row& r : rows) {
    EXPECT_EQ(r.algorithm, conv->meta["software"].value("algorithm", "?"));
    EXPECT_GT(r.median_ms, 0);
    EXPECT_GE(r.runs, 4);
    EXPECT_NEAR(r.flops, 2.0 * 16 * 16 * 16 * 8 * 9, 16 * 16 * 16 * 4.0);  // MACs x 2 (+ bias, relu)
    EXPECT_GT(r.bytes, 4.0 * (8 * 16 * 16 + 16 * 16 * 16));
    EXPECT_EQ(r.op.text(), k.text());
  }
  // A node without weights has no cold regime.
  const ir::Node* free = nullptr;
  for (size_t i = 0; i < s.num_steps(); ++i) {
    const ir::Node& n = s.step_node(i);
    if (std::none_of(n.inputs.begin(), n.inputs.end(), [&](auto& in) { return s.graph().is_initializer(in); }))
      free = &n;
  }
  ASSERT_NE(free, nullptr);
  EXPECT_TRUE(opdb::regime_applies("cold", s.graph(), *conv));
  EXPECT_FALSE(opdb::regime_applies("cold", s.graph(), *free));
  const std::vector<opdb::Row> free_rows = opdb::measure_node(s.graph(), *free, "", mo);
  ASSERT_EQ(free_rows.size(), 2u);
  EXPECT_EQ(free_rows[1].regime, "fresh");
  // An algorithm asked for is the one measured.
  const std::vector<opdb::Row> ref = opdb::measure_node(s.graph(), *conv, "reference", mo);
  EXPECT_EQ(ref[0].algorithm, "reference");
  EXPECT_EQ(ref[0].op.text(), k.text());
  EXPECT_THROW(opdb::measure_node(s.graph(), *conv, "", [] {
    opdb::MeasureOptions bad;
    bad.regimes = {"tepid"};
    return bad;
  }()), Error);
}

TEST(OpdbCollect, MeasuresDistinctNodesOnceAndRecordsOrigins) {
  const fs::path dir = joule::testing::scratch_dir("opdb_collect");
  opdb::Store db((dir / "db.sqlite").string());
  api::Prepared p = api::prepare(small_cnn(), api::PrepareOptions::with_threads(1));
  opdb::CollectStats a = opdb::collect_session(*p.session, db, fast_collect("model:a"));
  EXPECT_EQ(a.steps, p.session->num_steps());
  EXPECT_EQ(a.measured + a.skipped.size(), a.distinct);
  EXPECT_TRUE(a.skipped.empty()) << a.skipped[0];
  EXPECT_GT(db.count(), 2 * a.measured);  // reused and fresh, and cold for the nodes with weights
  EXPECT_LT(db.count(), 3 * a.measured);
  // The same model again under another name: nothing measured (no cold row is missing from a
  // node without weights), every row gains the origin.
  opdb::CollectStats b = opdb::collect_session(*p.session, db, fast_collect("model:b"));
  EXPECT_EQ(b.measured, 0u);
  EXPECT_EQ(b.known, a.distinct);
  for (const opdb::Row& r : db.rows()) EXPECT_EQ(r.origins, (std::vector<std::string>{"model:a", "model:b"}));
}

TEST(OpdbSweep, ShippedConfigExpandsAndBadConfigsNameTheLine) {
  const opdb::SweepConfig c = opdb::load_sweep_config(opdb::default_sweep_config_path());
  const std::vector<opdb::SweepCase> sanity = opdb::sweep_cases(c, "sanity");
  EXPECT_EQ(sanity.size(), c.stages.at("quick").size());
  const std::vector<opdb::SweepCase> quick = opdb::sweep_cases(c, "quick"), full = opdb::sweep_cases(c, "full");
  EXPECT_GT(quick.size(), 200u);
  EXPECT_GT(full.size(), quick.size());
  for (const opdb::SweepCase& sc : quick) {
    ir::Graph g = sc.graph;
    EXPECT_NO_THROW(api::apply_passes(g, "default")) << sc.label;
  }

  const fs::path dir = joule::testing::scratch_dir("opdb_sweepcfg");
  auto error_of = [&](const std::string& yaml, const std::string& stage = "quick") {
    const std::string p = (dir / "c.yaml").string();
    write_file_atomic(p, yaml);
    try {
      opdb::sweep_cases(opdb::load_sweep_config(p), stage);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("quick:\n  - op: Conv\n    channels: [8]\n    wings: 2\n").find("c.yaml:2: 'wings' is not a parameter"), std::string::npos);
  EXPECT_NE(error_of("quick:\n  - op: Frobnicate\n").find("no sweep for op 'Frobnicate'"), std::string::npos);
  EXPECT_NE(error_of("quick:\n  - op: Conv\n    channels: [-3]\n").find("positive integer"), std::string::npos);
  EXPECT_NE(error_of("slow:\n  - op: Relu\n").find("unknown key 'slow'"), std::string::npos);
  EXPECT_NE(error_of("quick: [\n").find("not valid YAML"), std::string::npos);
  // A 3x3 conv of 512 channels at 112x112 is 59 GFLOP: left out under max_gflop.
  EXPECT_NE(error_of("max_gflop: 1\nquick:\n  - op: Conv\n    channels: 512\n    size: 112\n").find("has no points"),
            std::string::npos);
  EXPECT_EQ(error_of("quick:\n  - op: Conv\n    channels: [8, 16]\n    size: [4, 8]\n"), "no error");
  const std::string p = (dir / "c.yaml").string();
  EXPECT_EQ(opdb::sweep_cases(opdb::load_sweep_config(p), "quick").size(), 4u);
  EXPECT_EQ(opdb::sweep_cases(opdb::load_sweep_config(p), "sanity").size(), 1u);
}

// Chained points (the default) run in the form a model's layers run in: the conv, pool, batch
// norm or concat between depthwise 1x1 convs, so N,H,W,C and on the algorithm a model's layer
// gets; factorised kernels, GELU products, and chained: no for the lone N,C,H,W node.
TEST(OpdbSweep, ChainedPointsRunAsInAModel) {
  const fs::path dir = joule::testing::scratch_dir("opdb_chained");
  const std::string p = (dir / "c.yaml").string();
  write_file_atomic(p, R"(quick:
  - op: Conv
    kernel: 1
    kernel_w: 7
    channels: 32
    size: 12
  - op: Conv
    channels: 32
    size: 12
    chained: no
  - op: BatchNormalization
    channels: 32
    size: 12
  - op: MaxPool
    channels: 32
    size: 12
  - op: Concat
    channels: 32
    size: 12
  - op: MatMul
    m: 20
    k: 32
    n: 64
    act: Gelu
)");
  const std::vector<opdb::SweepCase> cases = opdb::sweep_cases(opdb::load_sweep_config(p), "quick");
  ASSERT_EQ(cases.size(), 6u);
  // The nodes of a point's plan (default passes, 1 thread) of an op type.
  auto planned = [&](size_t i, const std::string& op) {
    api::Prepared pr = api::prepare(cases[i].graph, api::PrepareOptions::with_threads(1));
    std::vector<ir::Node> out;
    for (size_t s = 0; s < pr.session->num_steps(); ++s)
      if (pr.session->step_node(s).op_type == op) out.push_back(pr.session->step_node(s));
    return out;
  };
  auto has = [](const std::vector<ir::Node>& ns, auto pred) { return std::any_of(ns.begin(), ns.end(), pred); };
  const std::vector<ir::Node> factorised = planned(0, "FusedConv");
  EXPECT_EQ(factorised.size(), 2u);  // the neighbour and the point's
  EXPECT_TRUE(has(factorised, [](const ir::Node& n) {
    return n.attr_ints("kernel_shape") == std::vector<int64_t>{1, 7} &&
           n.attr_ints("pads") == std::vector<int64_t>{0, 3, 0, 3} && n.attr_int("channels_last", 0) == 1;
  })) << cases[0].label;
  const std::vector<ir::Node> alone = planned(1, "FusedConv");
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].attr_int("channels_last", 0), 0);
  // Not folded into the conv before it, and in N,H,W,C with the ReLU after it.
  const std::vector<ir::Node> bn = planned(2, "BatchNormalization");
  ASSERT_EQ(bn.size(), 1u);
  EXPECT_EQ(bn[0].domain, "joule");
  EXPECT_EQ(bn[0].attr_int("channels_last", 0), 1);
  const std::vector<ir::Node> pool = planned(3, "MaxPool");
  ASSERT_EQ(pool.size(), 1u);
  EXPECT_EQ(pool[0].attr_int("channels_last", 0), 1);
  const std::vector<ir::Node> cat = planned(4, "Concat");
  ASSERT_EQ(cat.size(), 1u);
  EXPECT_EQ(cat[0].attr_int("axis", 1), 3);  // the channels of an N,H,W,C tensor
  const std::vector<ir::Node> mm = planned(5, "FusedMatMul");
  ASSERT_EQ(mm.size(), 1u);
  EXPECT_EQ(mm[0].attr_string("activation", ""), "Gelu");

  write_file_atomic(p, "quick:\n  - op: MaxPool\n    chained: maybe\n");
  try {
    opdb::sweep_cases(opdb::load_sweep_config(p), "quick");
    ADD_FAILURE() << "chained: maybe accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("c.yaml:2: chained must be yes or no, not 'maybe'"), std::string::npos) << e.what();
  }
}

// What predict compiles: the plan a full session runs (the same steps on the same algorithms),
// nothing prepared, and it refuses to run.
TEST(Predictor, PlanOnlySessionHasTheFullPlanAndDoesNotRun) {
  api::Prepared full = api::prepare(small_cnn(), api::PrepareOptions::with_threads(1));
  api::PrepareOptions o = api::PrepareOptions::with_threads(1);
  o.plan_only = true;
  api::Prepared plan = api::prepare(small_cnn(), o);
  ASSERT_EQ(plan.session->num_steps(), full.session->num_steps());
  for (size_t i = 0; i < full.session->num_steps(); ++i)
    EXPECT_EQ(plan.session->step_node(i).meta["software"].value("algorithm", ""),
              full.session->step_node(i).meta["software"].value("algorithm", ""))
        << full.session->step_node(i).name;
  EXPECT_THROW(plan.session->run(runtime::random_inputs(*full.session)), Error);
}

TEST(Predictor, ExactRowsThenRegressorThenRoofline) {
  const fs::path dir = joule::testing::scratch_dir("opdb_predict");
  opdb::Store db((dir / "db.sqlite").string());
  api::Prepared p = api::prepare(small_cnn(), api::PrepareOptions::with_threads(1));
  const runtime::Session& s = *p.session;
  opdb::collect_session(*p.session, db, fast_collect("model:cnn"));

  // Every layer exact, at the geometric mean of its warm and cold-input regimes (mid).
  predict::PredictorOptions mid;
  mid.regime = "mid";
  predict::Predictor pr(db, mid);
  const predict::Prediction all = pr.predict(s, "cnn");
  ASSERT_EQ(all.layers.size(), s.num_steps());
  double sum = 0;
  for (const predict::LayerPrediction& L : all.layers) {
    EXPECT_EQ(L.source, "exact") << L.name;
    const opdb::OpKey k = opdb::op_key(s.graph(), s.step_node(L.step));
    auto r = db.find(k, L.algorithm, 1, "fp32", "reused", opdb::this_cpu(), opdb::this_isa(), JOULE_VERSION);
    auto f = db.find(k, L.algorithm, 1, "fp32", "fresh", opdb::this_cpu(), opdb::this_isa(), JOULE_VERSION);
    ASSERT_TRUE(r && f);
    EXPECT_NEAR(L.latency_ms, std::sqrt(r->median_ms * f->median_ms), 1e-12);
    ASSERT_TRUE(L.energy_j.has_value());
    sum += L.latency_ms;
  }
  EXPECT_NEAR(all.latency_ms, sum, 1e-12);
  EXPECT_DOUBLE_EQ(all.coverage_pct.at("exact"), 100.0);
  EXPECT_EQ(all.to_json()["layers"].size(), s.num_steps());

  // auto: warm times while the weights fit in the cache; with a cache too small for them,
  // each layer with weights adds what the cold regime adds, at most twice its weights' read.
  const predict::Prediction warm = predict::Predictor(db).predict(s, "cnn");
  EXPECT_EQ(warm.regime, "auto");
  EXPECT_GT(warm.weight_bytes, 4.0 * 16 * 8 * 9);
  EXPECT_EQ(warm.cold_share, 0);
  predict::PredictorOptions tiny;
  tiny.llc_bytes = warm.weight_bytes / 4;
  const predict::Prediction cold = predict::Predictor(db, tiny).predict(s, "cnn");
  EXPECT_EQ(cold.cold_share, 1);
  const double bw = profile::peak_bandwidth_gbs(1) * 1e9;
  bool raised = false;
  for (size_t i = 0; i < s.num_steps(); ++i) {
    const opdb::OpKey k = opdb::op_key(s.graph(), s.step_node(i));
    const std::string algo = warm.layers[i].algorithm;
    auto r = db.find(k, algo, 1, "fp32", "reused", opdb::this_cpu(), opdb::this_isa(), JOULE_VERSION);
    auto c = db.find(k, algo, 1, "fp32", "cold", opdb::this_cpu(), opdb::this_isa(), JOULE_VERSION);
    ASSERT_TRUE(r);
    EXPECT_DOUBLE_EQ(warm.layers[i].latency_ms, r->median_ms);
    EXPECT_EQ(c.has_value(), warm.layers[i].weight_bytes > 0);
    const double expect =
        c ? r->median_ms + std::clamp(c->median_ms - r->median_ms, 0.0, 2e3 * warm.layers[i].weight_bytes / bw)
          : r->median_ms;
    EXPECT_NEAR(cold.layers[i].latency_ms, expect, 1e-12) << cold.layers[i].name;
    raised = raised || cold.layers[i].latency_ms > warm.layers[i].latency_ms;
  }
  EXPECT_TRUE(raised);
  EXPECT_DOUBLE_EQ(predict::cold_share(1e6, 8e6), 0);
  EXPECT_DOUBLE_EQ(predict::cold_share(4e6, 8e6), 0.5);
  EXPECT_DOUBLE_EQ(predict::cold_share(7e6, 8e6), 1);

  // Leave the model's own rows out: no exact row, no regressor (too few rows): roofline bounds.
  predict::PredictorOptions loo;
  loo.exclude_origins = {"model:cnn"};
  const predict::Prediction none = predict::Predictor(db, loo).predict(s, "cnn");
  for (const predict::LayerPrediction& L : none.layers) {
    EXPECT_EQ(L.source, "roofline") << L.name;
    const double bound = 1e3 * std::max(L.flops / (profile::peak_gflops(1) * 1e9), L.bytes / (profile::peak_bandwidth_gbs(1) * 1e9));
    EXPECT_NEAR(L.latency_ms, bound, 1e-12);
  }

  // A regressor on synthetic rows of an op type: time = bytes / 10 GB/s; an unseen size is
  // predicted from it, not looked up.
  for (int64_t n = 1024; n <= (int64_t{1} << 22); n = n * 5 / 4) {
    db.put(row("Relu", n, 8.0 * n / 1e7, "reused"));
    db.put(row("Relu", n, 8.0 * n / 1e7, "fresh"));
  }
  predict::Predictor whole(db);
  // The prediction of a one-node graph: one layer, from a regressor.
  auto one = [&](const std::string& op, std::vector<int64_t> shape, std::map<std::string, ir::Attribute> attrs = {}) {
    ir::Graph g = joule::testing::GraphBuilder()
                      .input("x", DType::Float32, std::move(shape))
                      .node(op, {"x"}, {"y"}, std::move(attrs))
                      .output("y")
                      .build();
    api::Prepared p = api::prepare(g, api::PrepareOptions::with_threads(1));
    predict::Prediction r = whole.predict(*p.session, op);
    EXPECT_EQ(r.layers.size(), 1u);
    for (const predict::LayerPrediction& L : r.layers) EXPECT_EQ(L.source, "model") << op;
    return r;
  };
  const predict::Prediction m = one("Relu", {1, 3000 * 64});
  ASSERT_EQ(m.layers.size(), 1u);
  const double truth = m.layers[0].bytes / 1e7;
  EXPECT_NEAR(m.layers[0].latency_ms, truth, 0.3 * truth);
  EXPECT_GT(m.training_rows.at("Relu"), 8);
  // How sure: the regressor's out-of-fold errors on rows that follow one law exactly are small;
  // the whole prediction is this layer, so its expected error is the layer's median one.
  ASSERT_TRUE(m.layers[0].error_p50_pct && m.layers[0].error_p90_pct && m.expected_error_pct);
  EXPECT_GE(*m.layers[0].error_p50_pct, 0);
  EXPECT_LE(*m.layers[0].error_p50_pct, *m.layers[0].error_p90_pct);
  EXPECT_LT(*m.layers[0].error_p50_pct, 15) << *m.layers[0].error_p90_pct;
  EXPECT_NEAR(*m.expected_error_pct, *m.layers[0].error_p50_pct, 1e-9);
  EXPECT_EQ(m.to_json()["layers"][0]["error_p90_pct"].get<double>(), *m.layers[0].error_p90_pct);
  EXPECT_FALSE(all.expected_error_pct);  // measured rows only
  EXPECT_TRUE(all.to_json()["expected_error_pct"].is_null());

  // Eight times the largest row: the regressor corrects a roofline time rather than
  // predicting the time itself, so the prediction scales with the bytes (a tree of times
  // would give the largest row's).
  const predict::Prediction b = one("Relu", {1, int64_t{1} << 25});
  ASSERT_EQ(b.layers.size(), 1u);
  const double big_truth = b.layers[0].bytes / 1e7;
  EXPECT_NEAR(b.layers[0].latency_ms, big_truth, 0.3 * big_truth);

  // An op type with no row: its family's regressor (element-wise: here the Relus, so it
  // predicts their rate), not the roofline bound.
  const predict::Prediction n = one("Neg", {1, 3000 * 64});
  ASSERT_EQ(n.layers.size(), 1u);
  EXPECT_GT(n.training_rows.at("Neg"), 8);
  const double neg_truth = n.layers[0].bytes / 1e7;
  EXPECT_NEAR(n.layers[0].latency_ms, neg_truth, 0.3 * neg_truth);

  // A family with no row (pooling): the regressor of the whole store.
  const predict::Prediction q = one("MaxPool", {1, 16, 32, 32}, {{"kernel_shape", std::vector<int64_t>{2, 2}}});
  ASSERT_EQ(q.layers.size(), 1u);
  EXPECT_GT(q.layers[0].latency_ms, 0);
  EXPECT_EQ(q.training_rows.at(q.layers[0].op_type), static_cast<int>(whole.rows()));
}
