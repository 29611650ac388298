#include "joule/api/opdb.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>

#include "joule/core/error.h"
#include "joule/passes/pass.h"
#include "joule/profile/energy/energy_meter.h"
#include "joule/profile/profiler.h"

namespace joule::api {

namespace {
using Clock = std::chrono::steady_clock;

std::string store_path(const std::string& db) { return db.empty() ? opdb::Store::default_path() : db; }

// The path of a store that must already exist (reading commands do not create an empty one).
std::string existing_store(const std::string& db) {
  const std::string p = store_path(db);
  if (!std::filesystem::exists(p))
    fail(p + ": no operator database there (fill one with joule opdb sweep or joule opdb add)");
  return p;
}

// Symbolic dims of the inputs resolved: dim 0 to `batch` (1 when not given); BadInput when
// another dim is symbolic.
Model with_static_inputs(const Model& m, std::optional<int64_t> batch) {
  std::map<std::string, Shape> shapes;
  for (const std::string& in : m.input_names()) {
    const ir::TensorType* t = m.graph().type_of(in);
    if (!t || !t->has_shape) continue;
    Shape s;
    bool dynamic = false;
    for (size_t i = 0; i < t->dims.size(); ++i) {
      const ir::Dim& d = t->dims[i];
      if (i == 0 && (batch || !d.is_static())) {
        s.push_back(batch.value_or(1));
        dynamic = true;
      } else if (d.is_static()) {
        s.push_back(d.value);
      } else {
        fail(m.name() + ": input '" + in + "' dimension " + std::to_string(i) + " is symbolic (" + t->str() +
             "): give the model static shapes");
      }
    }
    if (dynamic) shapes[in] = s;
  }
  return shapes.empty() ? m : m.with_input_shapes(shapes);
}

std::unique_ptr<profile::energy::EnergyMeter> open_energy(const std::string& kind, std::string* source) {
  if (kind == "none") return nullptr;
  std::unique_ptr<profile::energy::EnergyMeter> m;
  if (kind == "auto") {
    std::vector<std::string> why;
    m = profile::energy::open_auto({}, why);
  } else {
    m = profile::energy::open_meter(kind);
  }
  *source = m->source();
  return m;
}

opdb::CollectOptions collect_options(const OpdbOptions& o, profile::energy::EnergyMeter* meter, const Hooks& hooks) {
  JOULE_CHECK(o.runs >= 1, "runs: " + std::to_string(o.runs) + " (at least 1)");
  JOULE_CHECK(!o.regimes.empty(), "no cache regime to measure (reused, fresh, cold)");
  for (int t : o.threads) JOULE_CHECK(t >= 0, "threads: " + std::to_string(t) + " is negative (0: every core)");
  opdb::CollectOptions c;
  c.measure.warmup = o.warmup;
  c.measure.runs = o.runs;
  c.measure.sample_ms = o.sample_ms;
  c.measure.min_time_s = o.min_time_s;
  c.measure.noisy_cv = o.noisy_cv;
  c.measure.regimes = o.regimes;
  c.measure.meter = meter;
  c.measure.checkpoint = [&hooks] { hooks.check(); };
  c.force = o.force;
  return c;
}

PrepareOptions prepare_options(int threads, const std::string& passes, const AlgoOptions& algo) {
  PrepareOptions p;
  p.threads = threads;
  p.passes = passes;
  p.algo = algo;
  return p;
}
}  // namespace

std::string origin_of(const Model& m) {
  std::string name = m.name();
  if (name == "model" && !m.path().empty()) {
    const std::string dir = std::filesystem::path(m.path()).parent_path().filename().string();
    if (!dir.empty()) name = safe_filename(dir);
  }
  return "model:" + name;
}

nlohmann::json OpdbReport::to_json() const {
  nlohmann::json ms = nlohmann::json::array();
  for (auto& m : models)
    ms.push_back({{"model", m.model},
                  {"origin", m.origin},
                  {"threads", m.threads},
                  {"steps", m.stats.steps},
                  {"distinct", m.stats.distinct},
                  {"measured", m.stats.measured},
                  {"already_in_store", m.stats.known},
                  {"skipped", m.stats.skipped}});
  return {{"db", db},           {"config", config}, {"stage", stage}, {"points", points},
          {"energy_source", energy_source}, {"models", ms}, {"rows", rows}, {"seconds", seconds}};
}

OpdbReport opdb_add(const std::vector<Model>& models, const OpdbOptions& o, const Hooks& hooks) {
  OpdbReport r;
  r.db = store_path(o.db);
  opdb::Store db(r.db);
  auto meter = open_energy(o.energy, &r.energy_source);
  opdb::CollectOptions c = collect_options(o, meter.get(), hooks);
  const auto t0 = Clock::now();
  for (int t : o.threads) {
    for (const Model& m0 : models) {
      const Model m = with_static_inputs(m0, std::nullopt);
      c.origin = origin_of(m0);
      Prepared p = prepare(m, prepare_options(t, o.passes, o.algo));
      OpdbModelReport mr{c.origin.substr(6), c.origin, p.session->threads(), {}};
      mr.stats = opdb::collect_session(*p.session, db, c, nullptr, [&](size_t done, size_t total, const std::string& what) {
        hooks.report("measuring", done, total,
                     fmt::format("{} ({} thread{}): [{}/{}] {}", m.name(), mr.threads, mr.threads == 1 ? "" : "s", done,
                                 total, what));
      });
      r.models.push_back(std::move(mr));
    }
  }
  r.rows = db.count();
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

OpdbReport opdb_sweep(const std::string& config, const std::string& stage, const OpdbOptions& o, const Hooks& hooks) {
  OpdbReport r;
  r.db = store_path(o.db);
  r.config = config.empty() ? opdb::default_sweep_config_path() : config;
  r.stage = stage;
  const opdb::SweepConfig cfg = opdb::load_sweep_config(r.config);
  const std::vector<opdb::SweepCase> cases = opdb::sweep_cases(cfg, stage);
  opdb::Store db(r.db);
  auto meter = open_energy(o.energy, &r.energy_source);
  opdb::CollectOptions c = collect_options(o, meter.get(), hooks);
  c.origin = "sweep";
  r.points = cases.size() * o.threads.size();
  const auto t0 = Clock::now();
  size_t done = 0, measured_points = 0;
  double measured_s = 0;
  for (int t : o.threads) {
    OpdbModelReport mr{"sweep:" + stage, c.origin, t, {}};
    for (const opdb::SweepCase& sc : cases) {
      const double left = measured_points ? measured_s / measured_points * double(r.points - done) : -1;
      hooks.report("sweeping", done, r.points,
                   fmt::format("[{}/{}] {} ({} thread{})  eta {}", done, r.points, sc.label, t, t == 1 ? "" : "s",
                               left < 0 ? std::string("?") : fmt::format("{:.0f}s", left)));
      const auto p0 = Clock::now();
      try {
        Prepared p = prepare(sc.graph, prepare_options(t, o.passes, o.algo));
        mr.threads = p.session->threads();
        opdb::CollectStats s = opdb::collect_session(*p.session, db, c);
        if (s.measured) {
          ++measured_points;
          measured_s += std::chrono::duration<double>(Clock::now() - p0).count();
        }
        mr.stats.add(s);
      } catch (const Error& e) {
        if (e.kind() == Error::Kind::Cancelled) throw;
        mr.stats.skipped.push_back(sc.label + ": " + e.what());
      }
      ++done;
    }
    r.models.push_back(std::move(mr));
  }
  hooks.report("sweeping", done, r.points, "");
  r.rows = db.count();
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

size_t opdb_record_profile(const Model& m0, const profile::ProfileResult& r, const std::string& db_path,
                           const PrepareOptions& how, const runtime::TensorMap& inputs) {
  const Model m = inputs.empty() ? with_static_inputs(m0, std::nullopt) : m0.resolved_for(inputs);
  PrepareOptions p = how;
  p.threads = r.threads;
  Prepared plan = prepare(m, p);
  const runtime::Session& s = *plan.session;
  opdb::Store db(store_path(db_path));
  opdb::Store::Transaction t(db);
  size_t written = 0;
  for (const profile::LayerResult& L : r.layers) {
    if (L.step >= s.num_steps() || s.step_node(L.step).name != L.name) continue;
    opdb::Row row;
    row.op = opdb::op_key(s.graph(), s.step_node(L.step));
    row.algorithm = L.algorithm;
    row.threads = r.threads;
    row.precision = opdb::precision_of(row.op, row.algorithm);
    row.regime = row.mode = "in-model";
    row.cpu = opdb::this_cpu();
    row.isa = opdb::this_isa();
    row.joule_version = JOULE_VERSION;
    row.median_ms = L.ms.median;
    row.trimmed_mean_ms = L.ms.trimmed_mean;
    row.std_ms = L.ms.std;
    row.cv = L.ms.cv;
    row.runs = static_cast<int>(L.ms.n);
    row.noisy = L.ms.noisy;
    row.flops = L.flops;
    row.bytes = L.bytes;
    if (L.energy_j && r.energy) {
      row.energy_j = L.energy_j;
      row.energy_source = r.energy->source;
    }
    row.origins = {origin_of(m0)};
    db.put(row);
    ++written;
  }
  t.commit();
  return written;
}

nlohmann::json opdb_stats(const std::string& path) {
  const std::string p = existing_store(path);
  opdb::Store db(p);
  std::map<std::string, int> by_type, by_regime, by_origin, by_threads, cpus, versions, by_mode;
  int noisy = 0;
  double max_cv = 0;
  const std::vector<opdb::Row> rows = db.rows();
  for (const opdb::Row& r : rows) {
    ++by_type[r.op.op_type];
    ++by_regime[r.regime];
    ++by_threads[std::to_string(r.threads)];
    ++cpus[r.cpu + " [" + r.isa + "]"];
    ++versions[r.joule_version];
    ++by_mode[r.mode];
    for (auto& o : r.origins) ++by_origin[o];
    noisy += r.noisy;
    max_cv = std::max(max_cv, r.cv);
  }
  return {{"db", p},
          {"schema_version", opdb::Store::kSchemaVersion},
          {"rows", rows.size()},
          {"noisy_rows", noisy},
          {"max_cv", max_cv},
          {"op_types", by_type},
          {"regimes", by_regime},
          {"threads", by_threads},
          {"modes", by_mode},
          {"origins", by_origin},
          {"cpus", cpus},
          {"joule_versions", versions}};
}

std::string opdb_export_csv(const std::string& path) {
  const std::string p = existing_store(path);
  opdb::Store db(p);
  std::string out = profile::csv_line({"op_type", "attrs", "inputs", "outputs", "algorithm", "threads", "precision",
                                       "regime", "cpu", "isa", "joule_version", "median_ms", "trimmed_mean_ms",
                                       "std_ms", "cv", "runs", "noisy", "flops", "bytes", "energy_j", "energy_source",
                                       "mode", "timestamp", "origins"});
  for (const opdb::Row& r : db.rows()) {
    std::string origins;
    for (auto& o : r.origins) origins += (origins.empty() ? "" : ";") + o;
    out += profile::csv_line({r.op.op_type, r.op.attrs.dump(), nlohmann::json(r.op.inputs).dump(),
                              nlohmann::json(r.op.outputs).dump(), r.algorithm, std::to_string(r.threads), r.precision,
                              r.regime, r.cpu, r.isa, r.joule_version, fmt::format("{:.6g}", r.median_ms),
                              fmt::format("{:.6g}", r.trimmed_mean_ms), fmt::format("{:.6g}", r.std_ms),
                              fmt::format("{:.4g}", r.cv), std::to_string(r.runs), r.noisy ? "1" : "0",
                              fmt::format("{:.6g}", r.flops), fmt::format("{:.6g}", r.bytes),
                              r.energy_j ? fmt::format("{:.6g}", *r.energy_j) : "", r.energy_source, r.mode,
                              r.timestamp, origins});
  }
  return out;
}

// ---- prediction ----

namespace {
std::unique_ptr<runtime::Session> compile(const Model& m, const PredictOptions& o) {
  PrepareOptions p = prepare_options(o.threads, o.passes, o.algo);
  p.int8 = o.int8;
  p.plan_only = true;  // the plan is what is predicted: no kernel is prepared
  return prepare(with_static_inputs(m, o.batch), p).session;
}
}  // namespace

std::unique_ptr<predict::Predictor> open_predictor(const std::string& db, const predict::PredictorOptions& o) {
  opdb::Store store(existing_store(db));
  return std::make_unique<predict::Predictor>(store, o);
}

predict::Prediction predict_model(const Model& m, const PredictOptions& o) {
  JOULE_CHECK(o.threads >= 0, "threads: " + std::to_string(o.threads) + " is negative (0: every core)");
  JOULE_CHECK(!o.batch || *o.batch > 0, "batch must be positive");
  opdb::Store db(existing_store(o.db));
  auto session = compile(m, o);
  predict::Predictor pr(db, o.predictor);
  return pr.predict(*session, origin_of(m).substr(6));  // the zoo's folder/model.onnx: the folder
}

nlohmann::json CoverageReport::to_json() const {
  nlohmann::json g = nlohmann::json::array();
  for (auto& x : gaps) g.push_back({{"op_type", x.op_type}, {"time_pct", x.time_pct}, {"layers", x.layers}});
  return {{"model", prediction.model}, {"exact_pct", exact_pct}, {"coverage", prediction.to_json()["coverage"]},
          {"gaps", g}, {"sweep_next", sweep_next}, {"target_pct", 90}};
}

CoverageReport opdb_coverage(const Model& m, const PredictOptions& o) {
  CoverageReport r;
  r.prediction = predict_model(m, o);
  r.exact_pct = r.prediction.coverage_pct["exact"];
  std::map<std::string, CoverageReport::Gap> gaps;
  for (auto& L : r.prediction.layers) {
    if (L.source == "exact") continue;
    auto& g = gaps[L.op_type];
    g.op_type = L.op_type;
    g.time_pct += r.prediction.latency_ms > 0 ? 100.0 * L.latency_ms / r.prediction.latency_ms : 0;
    ++g.layers;
  }
  for (auto& [k, g] : gaps) r.gaps.push_back(g);
  std::sort(r.gaps.begin(), r.gaps.end(), [](auto& a, auto& b) { return a.time_pct > b.time_pct; });
  double cum = r.exact_pct;
  for (auto& g : r.gaps) {
    if (cum >= 90) break;
    r.sweep_next.push_back(g.op_type);
    cum += g.time_pct;
  }
  return r;
}

nlohmann::json ValidationReport::to_json() const {
  nlohmann::json ms = nlohmann::json::array();
  for (auto& m : models)
    ms.push_back({{"model", m.model},
                  {"predicted_ms", m.predicted_ms},
                  {"measured_ms", m.measured_ms},
                  {"round_ms", m.round_ms},
                  {"error_pct", m.error_pct},
                  {"layer_sum_ms", m.layer_sum_ms},
                  {"layer_median_abs_error_pct", m.layer_median_abs_error_pct},
                  {"coverage_pct", m.coverage_pct},
                  {"excluded_origins", m.excluded_origins}});
  return {{"models", ms},
          {"within_5_pct", within_5_pct},
          {"within_10_pct", within_10_pct},
          {"median_abs_error_pct", median_abs_error_pct},
          {"leave_one_out", leave_one_out},
          {"rounds", rounds}};
}

ValidationReport validate_predictions(const std::vector<Model>& models0, const PredictOptions& o,
                                      const ValidateOptions& vo, const Hooks& hooks) {
  JOULE_CHECK(vo.runs >= 1, "runs: " + std::to_string(vo.runs) + " (at least 1)");
  JOULE_CHECK(vo.rounds >= 1, "rounds: " + std::to_string(vo.rounds) + " (at least 1)");
  opdb::Store db(existing_store(o.db));
  ValidationReport r;
  r.leave_one_out = vo.leave_one_out;
  r.rounds = vo.rounds;
  std::vector<Model> models;
  std::vector<predict::Prediction> preds;
  // One predictor (its rows read and regressors trained once) unless each model hides its own rows.
  std::optional<predict::Predictor> shared;
  if (!vo.leave_one_out) shared.emplace(db, o.predictor);
  for (const Model& m0 : models0) {
    hooks.report("predicting", models.size(), models0.size(), m0.name());
    models.push_back(with_static_inputs(m0, o.batch));
    ValidationModel v;
    v.model = origin_of(m0).substr(6);
    predict::PredictorOptions po = o.predictor;
    if (vo.leave_one_out) po.exclude_origins.push_back(origin_of(m0));
    v.excluded_origins = po.exclude_origins;
    auto session = compile(models.back(), o);
    preds.push_back(shared ? shared->predict(*session, v.model) : predict::Predictor(db, po).predict(*session, v.model));
    r.models.push_back(std::move(v));
  }
  // Measured with the profiler: plain runs for the model, instrumented runs per layer.
  profile::ProfileOptions po;
  po.threads = o.threads;
  po.runs = vo.runs;
  po.min_time_s = vo.min_time_s;
  po.passes = passes::parse_pipeline(o.passes);
  po.algo = o.algo.spec();
  apply_int8_mode(o.int8, po.passes, po.algo);
  po.checkpoint = [&hooks] { hooks.check(); };
  std::vector<std::optional<profile::ProfileResult>> best(models.size());
  const size_t total = models.size() * static_cast<size_t>(vo.rounds);
  for (int round = 0; round < vo.rounds; ++round)
    for (size_t i = 0; i < models.size(); ++i) {
      hooks.report("measuring", round * models.size() + i, total,
                   fmt::format("round {}/{}: {}", round + 1, vo.rounds, r.models[i].model));
      po.model_name = r.models[i].model;
      profile::ProfileResult meas = profile::profile_model(models[i].graph(), po);
      r.models[i].round_ms.push_back(meas.plain_ms.median);
      if (!best[i] || meas.plain_ms.median < best[i]->plain_ms.median) best[i] = std::move(meas);
    }
  hooks.report("measuring", total, total, "");
  std::vector<double> errs;
  for (size_t i = 0; i < models.size(); ++i) {
    ValidationModel& v = r.models[i];
    const predict::Prediction& pred = preds[i];
    const profile::ProfileResult& meas = *best[i];
    v.predicted_ms = pred.latency_ms;
    v.measured_ms = meas.plain_ms.median;
    v.layer_sum_ms = meas.layer_sum_ms;
    v.error_pct = v.measured_ms > 0 ? 100.0 * (v.predicted_ms / v.measured_ms - 1) : 0;
    v.coverage_pct = pred.coverage_pct;
    std::vector<double> layer_errs;
    for (auto& L : meas.layers)
      if (L.step < pred.layers.size() && L.ms.median > 0)
        layer_errs.push_back(100.0 * std::abs(pred.layers[L.step].latency_ms / L.ms.median - 1));
    v.layer_median_abs_error_pct = layer_errs.empty() ? 0 : profile::percentile(layer_errs, 50);
    errs.push_back(std::abs(v.error_pct));
  }
  if (!errs.empty()) {
    r.within_5_pct = 100.0 * std::count_if(errs.begin(), errs.end(), [](double e) { return e <= 5; }) / errs.size();
    r.within_10_pct = 100.0 * std::count_if(errs.begin(), errs.end(), [](double e) { return e <= 10; }) / errs.size();
    r.median_abs_error_pct = profile::percentile(errs, 50);
  }
  return r;
}

}  // namespace joule::api
