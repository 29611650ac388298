#include "joule/api/automp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>

#include "joule/api/prepare.h"
#include "joule/api/run.h"
#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/quant/automp.h"

namespace joule::api {

namespace {

// Median latency of the graph on one input (a QDQ graph as `int8` says).
double median_ms(const ir::Graph& g, const runtime::TensorMap& input, int threads, const std::string& int8,
                 const Hooks& hooks) {
  auto s = fast_session(g, threads, int8);
  for (int i = 0; i < 3; ++i) s->run(input);
  std::vector<double> ms;
  for (int i = 0; i < 15; ++i) {
    hooks.check();
    auto t0 = std::chrono::steady_clock::now();
    s->run(input);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// A directory that is removed when this goes out of scope (the calibration cache of a call
// that writes nothing).
struct TempDir {
  std::string path;
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "joule_automp_XXXXXX").string();
    if (!mkdtemp(t.data())) fail_internal("automp: cannot create a temporary directory");
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

AutoMpReport automp(const Model& m, const AutoMpOptions& o, const Hooks& hooks) {
  const QuantOptions& qo = o.quant;
  check_int8_mode(qo.int8);
  quant::check_ladder(o.ladder);
  const bool by_sqnr = o.sqnr_target > 0;
  if (!by_sqnr && qo.eval.empty()) fail("automp: give labelled eval data (or an SQNR target without labels)");
  if (qo.calib.empty()) fail("automp: calibration data is required");
  if (o.samples < 1) fail("automp: samples must be at least 1");
  const ConfigText config = read_config(qo.config);
  QuantModel q = plan_model(m, qo, qo.config);
  std::unique_ptr<data::Dataset> eval_set;
  if (!qo.eval.empty()) eval_set = open_data(qo.eval, q.model, qo.preprocess);
  std::unique_ptr<data::Dataset> calib_set = open_data(qo.calib, q.model, qo.preprocess);
  std::optional<TempDir> tmp;
  if (o.out_dir.empty()) tmp.emplace();
  const std::string dir = o.out_dir.empty() ? tmp->path : o.out_dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(dir + ": cannot create directory: " + ec.message());
  QuantOptions calib_opts = qo;
  if (calib_opts.calib_cache.empty()) calib_opts.calib_cache = dir + "/calib_cache.json";
  const size_t calibrated = calibrate(q, calib_opts, hooks);
  const std::vector<quant::NodeChoice> start = q.plan.choices;

  // Samples compared over: the ranking, and the score in SQNR mode.
  LoadedSamples s = load_samples(eval_set ? *eval_set : *calib_set, q.graph.inputs[0], o.samples);
  quant::SensitivityOptions so;
  so.mode = quant::SensitivityMode::Isolated;
  so.variants = {"all"};
  so.threads = qo.threads;
  so.progress = [&](const std::string& msg) { hooks.report("ranking", 0, 0, "ranking: " + msg); };
  const quant::SensitivityReport sens = quant::sensitivity(q.graph, q.plan, s.inputs, {}, so);
  std::vector<size_t> ranking(start.size());
  for (size_t i = 0; i < ranking.size(); ++i) ranking[i] = i;
  auto sqnr_at = [&](size_t i) {
    auto it = sens.layers[i].metrics.find("all");
    return it == sens.layers[i].metrics.end() ? 1e9 : it->second.sqnr_db;
  };
  std::stable_sort(ranking.begin(), ranking.end(), [&](size_t x, size_t y) { return sqnr_at(x) < sqnr_at(y); });

  std::vector<Tensor> ref_out;
  if (by_sqnr) {
    auto f = fast_session(q.graph, qo.threads, "simulated");
    for (auto& in : s.inputs) ref_out.push_back(f->run(in).at(f->output_names()[0]).clone());
  }
  // Calibrated from the cache file after the first time: only new formats run the model.
  auto quantized_graph = [&](const std::vector<quant::NodeChoice>& choices, double* bytes = nullptr) {
    QuantModel c{q.model, q.graph, quant::plan_quantization(q.graph, choices)};
    calibrate(c, calib_opts, hooks);
    if (bytes) *bytes = quant::weight_bytes(c.graph, c.plan);
    return quant::insert_qdq(c.graph, c.plan);
  };
  auto score = [&](const std::vector<quant::NodeChoice>& choices) {
    ir::Graph g = quantized_graph(choices);
    if (!by_sqnr) return 100 * evaluate_graph(g, *eval_set, qo, hooks, "candidate").top1_rate();
    auto qs = fast_session(g, qo.threads, qo.int8);
    quant::MetricsAccumulator acc;
    for (size_t i = 0; i < s.inputs.size(); ++i) acc.add(ref_out[i], qs->run(s.inputs[i]).at(qs->output_names()[0]));
    return acc.result().sqnr_db;
  };
  double reference = o.sqnr_target;
  if (!by_sqnr) reference = 100 * evaluate_graph(q.graph, *eval_set, qo, hooks, "fp32").top1_rate();
  quant::AutoMpOptions ao;
  ao.ladder = o.ladder;
  ao.max_drop = by_sqnr ? 0.0 : o.max_drop;
  ao.strategy = o.strategy;
  for (auto& c : start) ao.names.push_back(q.graph.nodes[c.node]->name);
  ao.progress = [&](const std::string& msg) { hooks.report("automp", 0, 0, "automp: " + msg); };
  const quant::AutoMpResult r = quant::automp(start, ranking, score, reference, ao);

  // Side by side: FP32, everything at the config's formats, the AutoMP result.
  const runtime::TensorMap& probe = s.inputs[0];
  double all_bytes = 0, mp_bytes = 0;
  const ir::Graph all_q = quantized_graph(start, &all_bytes);
  ir::Graph mp_q = quantized_graph(r.choices, &mp_bytes);
  struct Row {
    std::string name;
    double score, bytes, ms;
  };
  const std::string config_stem =
      config.label == "inline config" ? "config" : std::filesystem::path(config.label).stem().string();
  std::vector<Row> rows{
      {"fp32", by_sqnr ? std::numeric_limits<double>::infinity() : reference,
       quant::weight_bytes(q.graph, quant::QuantPlan{}), median_ms(q.graph, probe, qo.threads, qo.int8, hooks)},
      {"all " + config_stem, r.start_score, all_bytes, median_ms(all_q, probe, qo.threads, qo.int8, hooks)},
      {"automp", r.final_score, mp_bytes, median_ms(mp_q, probe, qo.threads, qo.int8, hooks)}};

  AutoMpReport rep;
  rep.yaml = quant::automp_config_yaml(config.yaml, config.label, q.graph, start, r);
  rep.model = q.model.derived(std::move(mp_q), q.model.name() + "_automp");
  nlohmann::json& j = rep.json;
  j = {{"model", model_label(q.model)},
       {"config", config.label},
       {"objective", by_sqnr ? "final-output SQNR (dB)" : "top-1 (%)"},
       {"reference", reference},
       {"max_drop", ao.max_drop},
       {"strategy", ao.strategy},
       {"ladder", ao.ladder},
       {"met", r.met},
       {"calibration_samples", calibrated},
       {"samples", s.inputs.size()},
       {"threads", qo.threads},
       {"int8", qo.int8},
       {"latency_note", int8_note(qo.int8)}};
  for (size_t i = 0; i < start.size(); ++i) {
    const size_t rank = static_cast<size_t>(std::find(ranking.begin(), ranking.end(), i) - ranking.begin());
    j["layers"].push_back({{"node", ao.names[i]},
                           {"op", q.graph.nodes[start[i].node]->op_type},
                           {"isolated_sqnr_db", sqnr_at(i)},
                           {"rank", rank},
                           {"precision", r.rung[i].empty() ? "config" : r.rung[i]}});
  }
  for (auto& st : r.steps) j["steps"].push_back({{"action", st.action}, {"score", st.score}, {"met", st.met}});
  for (auto& row : rows)
    j["summary"].push_back(
        {{"model", row.name},
         {"score", std::isinf(row.score) ? nlohmann::json("reference") : nlohmann::json(row.score)},
         {"weight_bytes", row.bytes},
         {"latency_ms", row.ms}});
  j["promoted"] = r.promoted();
  if (!o.out_dir.empty()) {
    write_file_atomic(o.out_dir + "/automp.yaml", rep.yaml);
    write_file_atomic(o.out_dir + "/automp.json", j.dump(2) + "\n");
  }
  return rep;
}

}  // namespace joule::api
