#include "joule/experiment/steps.h"

#include <filesystem>
#include <set>

#include "joule/api/compare.h"
#include "joule/api/evaluate.h"
#include "joule/api/opdb.h"
#include "joule/api/profile.h"
#include "joule/api/prune.h"
#include "joule/api/quantize.h"
#include "joule/api/run.h"
#include "joule/core/error.h"

namespace joule::experiment {

namespace fs = std::filesystem;

namespace {

// A step's parameters, read strictly: done() refuses any key no reader asked for.
class Params {
 public:
  Params(const Step& s, const std::string& base_dir) : j_(s.params), step_(s.name), base_(base_dir) {}

  bool has(const std::string& k) {
    known_.insert(k);
    return j_.contains(k) && !j_[k].is_null();
  }
  std::string str(const std::string& k, const std::string& def = "") {
    if (!has(k)) return def;
    const auto& v = j_[k];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number() || v.is_boolean()) return v.dump();
    bad(k, "a string", v);
  }
  int integer(const std::string& k, int def) {
    if (!has(k)) return def;
    const auto& v = j_[k];
    if (v.is_number_integer()) return v.get<int>();
    if (v.is_string()) try {
        size_t used = 0;
        int x = std::stoi(v.get<std::string>(), &used);
        if (used == v.get<std::string>().size()) return x;
      } catch (...) {
      }
    bad(k, "an integer", v);
  }
  double number(const std::string& k, double def) {
    if (!has(k)) return def;
    const auto& v = j_[k];
    if (v.is_number()) return v.get<double>();
    bad(k, "a number", v);
  }
  bool flag(const std::string& k, bool def) {
    if (!has(k)) return def;
    const auto& v = j_[k];
    if (v.is_boolean()) return v.get<bool>();
    bad(k, "true or false", v);
  }
  // One value or a list of them, each passing `is` (a json type test) and read as T.
  template <class T>
  std::vector<T> list(const std::string& k, const char* want, bool (nlohmann::json::*is)() const noexcept) {
    std::vector<T> out;
    if (!has(k)) return out;
    const auto& v = j_[k];
    if ((v.*is)()) return {v.get<T>()};
    if (!v.is_array()) bad(k, want, v);
    for (const auto& e : v) {
      if (!(e.*is)()) bad(k, want, v);
      out.push_back(e.get<T>());
    }
    return out;
  }
  std::vector<std::string> strings(const std::string& k) {
    return list<std::string>(k, "a string or a list of strings", &nlohmann::json::is_string);
  }
  std::vector<int> ints(const std::string& k) {
    return list<int>(k, "an integer or a list of integers", &nlohmann::json::is_number_integer);
  }
  std::vector<float> floats(const std::string& k) {
    return list<float>(k, "a number or a list of numbers", &nlohmann::json::is_number);
  }
  // A file name or data SPEC ("file:split"), resolved against the experiment file's folder when
  // it is relative and names something there.
  std::string path(const std::string& k, const std::string& def = "") { return resolve(str(k, def)); }
  std::string resolve(const std::string& v) const { return resolve_path(v, base_); }
  // A quantization config: a file name (resolved), YAML text, or a map written inline.
  std::string config(const std::string& k) {
    if (!has(k)) return "";
    const auto& v = j_[k];
    if (v.is_object()) return v.dump();
    return resolve(str(k));
  }

  void done() const {
    std::string unknown;
    for (const auto& [k, v] : j_.items())
      if (!known_.count(k)) unknown += (unknown.empty() ? "" : ", ") + k;
    if (unknown.empty()) return;
    std::string all;
    for (const auto& k : known_) all += (all.empty() ? "" : ", ") + k;
    fail("step '" + step_ + "': unknown parameter(s) " + unknown + " (known: " + all + ")");
  }

 private:
  [[noreturn]] void bad(const std::string& k, const char* want, const nlohmann::json& v) const {
    fail("step '" + step_ + "': parameter '" + k + "' must be " + want + ", got " + v.dump());
  }
  const nlohmann::json& j_;
  std::string step_, base_;
  std::set<std::string> known_;
};

// How a model is compiled: the fields PrepareOptions and ProfileOptions share.
template <class O>
void read_how(Params& p, O& o) {
  o.passes = p.str("passes", o.passes);
  o.int8 = p.str("int8", o.int8);
  o.precision = p.str("precision", o.precision);
  o.bf16_min_sqnr_db = p.number("bf16_min_sqnr", o.bf16_min_sqnr_db);
  o.algo.rules = p.strings("algo");
  o.algo.file = p.path("algo_file");
}

void read_prepare(Params& p, api::PrepareOptions& o, int default_threads) {
  o.threads = p.integer("threads", default_threads);
  read_how(p, o);
}

void read_preprocess(Params& p, api::DataOptions& o) {
  o.mean = p.floats("mean");
  o.std = p.floats("std");
  o.scale = static_cast<float>(p.number("scale", o.scale));
  o.resize = p.integer("resize", o.resize);
}

api::DataSource source(const std::string& spec) {
  return spec.empty() ? api::DataSource{} : api::DataSource::from_spec(spec);
}

void read_quant(Params& p, api::QuantOptions& q, const StepContext& c) {
  q.calib = source(p.path("calib", c.entry.calib));
  q.calib_samples = static_cast<size_t>(p.integer("calib_samples", static_cast<int>(q.calib_samples)));
  q.calib_cache = p.path("calib_cache");
  q.eval = source(p.path("data", ""));
  q.eval_samples = static_cast<size_t>(p.integer("limit", 0));
  q.threads = p.integer("threads", 1);
  q.int8 = p.str("int8", q.int8);
  read_preprocess(p, q.preprocess);
}

runtime::TensorMap read_inputs(Params& p, const api::Model& m) {
  std::vector<std::string> specs = p.strings("inputs");
  for (auto& s : specs) s = p.resolve(s);
  return specs.empty() ? runtime::TensorMap{} : api::read_inputs(specs, m.input_names());
}

// An empty folder for the step's files.
std::string step_dir(const StepContext& c, const Step& s) {
  if (c.run_dir.empty()) return "";
  const fs::path d = fs::path(c.run_dir) / s.name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

bool no_quantization(const std::string& config) {
  return config.empty() || config == "none" || config == "fp32" || config == "float32";
}

nlohmann::json step_quantize(const Step& s, StepContext& c, Params& p) {
  api::QuantOptions q;
  const bool named = p.has("config");
  q.config = p.config("config");
  read_quant(p, q, c);
  const bool save = p.flag("save", false);
  p.done();
  if (!named) fail("step '" + s.name + "': 'config' is required (a quantization config, or none)");
  if (no_quantization(q.config)) return {{"config", "none"}, {"skipped", "no quantization: the model stays float32"}};
  api::QuantizeResult r = api::quantize(c.model, q, c.hooks);
  nlohmann::json j = r.to_json();
  if (save && !c.run_dir.empty()) {
    const std::string out = (fs::path(step_dir(c, s)) / "model.onnx").string();
    r.model.save(out, true);
    j["output"] = out;
  }
  c.model = r.model;
  return j;
}

nlohmann::json step_prune(StepContext& c, Params& p) {
  prune::PruneOptions o;
  o.ratio = p.number("ratio", o.ratio);
  o.structured = p.flag("structured", o.structured);
  o.criterion = p.str("criterion", o.criterion);
  o.scope = p.str("scope", o.scope);
  o.seed = static_cast<uint32_t>(p.integer("seed", 0));
  p.done();
  api::PruneResult r = api::prune(c.model, o);
  c.model = r.model;
  return r.to_json();
}

nlohmann::json step_bench(StepContext& c, Params& p) {
  api::BenchOptions o;
  read_prepare(p, o.prepare, 1);
  o.warmup = p.integer("warmup", o.warmup);
  o.runs = p.integer("runs", o.runs);
  o.inputs = read_inputs(p, c.model);
  p.done();
  return api::bench(c.model, o, c.hooks).to_json();
}

nlohmann::json step_profile(const Step& s, StepContext& c, Params& p) {
  api::ProfileOptions o;
  o.threads = p.ints("threads");
  if (o.threads.empty()) o.threads = {1};
  if (p.has("warmup")) o.warmup = p.integer("warmup", 5);
  if (p.has("runs")) o.runs = p.integer("runs", 30);
  o.energy = p.str("energy", o.energy);
  o.energy_profile = p.path("energy_profile");
  o.layer_energy = p.flag("layer_energy", o.layer_energy);
  read_how(p, o);
  o.inputs = read_inputs(p, c.model);
  p.done();
  o.out_dir = step_dir(c, s);
  return api::profile(c.model, o, c.hooks).to_json();
}

nlohmann::json step_eval(StepContext& c, Params& p) {
  api::EvalOptions o;
  const std::string data = p.path("data", c.entry.data);
  o.limit = static_cast<size_t>(p.integer("limit", 0));
  read_prepare(p, o.prepare, 1);
  read_preprocess(p, o.preprocess);
  p.done();
  if (data.empty()) return {{"skipped", "no labelled data: give the step's data or the model's"}};
  o.data = api::DataSource::from_spec(data);
  return api::evaluate(c.model, o, c.hooks).to_json();
}

nlohmann::json step_compare(const Step& s, StepContext& c, Params& p) {
  api::CompareOptions o;
  for (const std::string& cfg : p.strings("configs")) o.configs.push_back(p.resolve(cfg));
  read_quant(p, o.quant, c);
  if (o.quant.eval.empty() && !c.entry.data.empty()) o.quant.eval = source(c.entry.data);
  o.runs = p.integer("runs", o.runs);
  o.warmup = p.integer("warmup", o.warmup);
  o.energy = p.str("energy", o.energy);
  o.energy_profile = p.path("energy_profile");
  o.bf16 = p.flag("bf16", false);
  o.bf16_min_sqnr_db = p.number("bf16_min_sqnr", o.bf16_min_sqnr_db);
  p.done();
  o.out_dir = step_dir(c, s);
  return api::compare(c.model, o, c.hooks).to_json();
}

nlohmann::json step_sensitivity(const Step& s, StepContext& c, Params& p) {
  api::SensitivityOptions o;
  o.quant.config = p.config("config");
  read_quant(p, o.quant, c);
  o.mode = p.str("mode", o.mode);
  o.samples = static_cast<size_t>(p.integer("samples", static_cast<int>(o.samples)));
  p.done();
  if (o.quant.config.empty()) fail("step '" + s.name + "': 'config' is required");
  o.out_dir = step_dir(c, s);
  return api::sensitivity(c.model, o, c.hooks).to_json();
}

nlohmann::json step_predict(StepContext& c, Params& p) {
  api::PredictOptions o;
  o.db = p.path("db");
  o.threads = p.integer("threads", 1);
  o.passes = p.str("passes", o.passes);
  o.int8 = p.str("int8", o.int8);
  o.algo.rules = p.strings("algo");
  o.predictor.regime = p.str("regime", o.predictor.regime);
  p.done();
  return api::predict_model(c.model, o).to_json();
}

double stat(const nlohmann::json& j, const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0; }

void put(RunRow& r, const std::string& name, const nlohmann::json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_number()) r.metrics[name] = j[key].get<double>();
}

void put_energy(RunRow& r, const std::string& prefix, const nlohmann::json& e) {
  if (!e.is_object()) return;
  if (e.contains("joules_per_inference") && e["joules_per_inference"].is_number())
    r.metrics[prefix + "energy_mj"] = e["joules_per_inference"].get<double>() * 1e3;
}

}  // namespace

nlohmann::json run_step(const Step& s, StepContext& c) {
  Params p(s, c.base_dir);
  if (s.kind == "quantize") return step_quantize(s, c, p);
  if (s.kind == "prune") return step_prune(c, p);
  if (s.kind == "bench") return step_bench(c, p);
  if (s.kind == "profile") return step_profile(s, c, p);
  if (s.kind == "eval") return step_eval(c, p);
  if (s.kind == "compare") return step_compare(s, c, p);
  if (s.kind == "sensitivity") return step_sensitivity(s, c, p);
  if (s.kind == "predict") return step_predict(c, p);
  fail("unknown step '" + s.kind + "'");
}

void summarize(const std::string& kind, const std::string& name, const nlohmann::json& j, RunRow& r) {
  const std::string n = name + ".";
  if (kind == "bench") {
    const auto& l = j.value("latency_ms", nlohmann::json::object());
    r.metrics[n + "latency_ms"] = stat(l, "median");
    put(r, n + "latency_mean_ms", l, "mean");
    put(r, n + "latency_p90_ms", l, "p90");
    put(r, n + "latency_cv", l, "cv");
    put(r, n + "peak_activation_bytes", j, "peak_activation_bytes");
    put(r, n + "threads", j, "threads");
  } else if (kind == "eval") {
    put(r, n + "top1", j, "top1");
    put(r, n + "top5", j, "top5");
    put(r, n + "samples", j, "samples");
  } else if (kind == "quantize") {
    put(r, n + "nodes_quantized", j, "nodes_quantized");
    put(r, n + "fake_quant_nodes", j, "fake_quant_nodes");
    if (j.contains("eval") && j["eval"].is_object())
      for (const auto& [which, e] : j["eval"].items())
        if (e.is_object()) put(r, n + which + ".top1", e, "top1");
  } else if (kind == "profile") {
    const auto& pts = j.value("points", nlohmann::json::array());
    if (pts.empty()) return;
    const auto& pt = pts.back();  // the last configuration measured: its layers are stored
    const auto& l = pt.value("latency_ms", nlohmann::json::object());
    r.metrics[n + "latency_ms"] = stat(l, "median");
    if (pt.contains("attribution")) put(r, n + "attribution_pct", pt["attribution"], "pct");
    put(r, n + "flops", pt, "total_flops");
    put_energy(r, n, pt.value("energy", nlohmann::json()));
    double sum = 0;
    std::vector<LayerRow> layers;
    for (const auto& x : pt.value("layers", nlohmann::json::array())) {
      LayerRow lr{x.value("name", ""), x.value("op", ""), x.value("algorithm", ""),
                  stat(x.value("latency_ms", nlohmann::json::object()), "median"), 0};
      sum += lr.ms;
      layers.push_back(std::move(lr));
    }
    // Execution order where the profile gives it (its list is sorted by time).
    std::vector<std::pair<int64_t, size_t>> order;
    const auto& xs = pt.value("layers", nlohmann::json::array());
    for (size_t i = 0; i < xs.size(); ++i) order.emplace_back(xs[i].value("step", static_cast<int64_t>(i)), i);
    std::sort(order.begin(), order.end());
    r.layers.clear();
    for (auto& [step, i] : order) {
      layers[i].pct = sum > 0 ? 100.0 * layers[i].ms / sum : 0;
      r.layers.push_back(layers[i]);
    }
    double ref = 0;
    for (const LayerRow& lr : r.layers)
      if (lr.algorithm == "reference") ref += lr.pct;
    r.metrics[n + "reference_pct"] = ref;
  } else if (kind == "compare") {
    for (const auto& row : j.value("rows", nlohmann::json::array())) {
      const std::string m = n + row.value("model", "row") + ".";
      r.metrics[m + "latency_ms"] = stat(row.value("latency_ms", nlohmann::json::object()), "median");
      if (row.contains("eval") && row["eval"].is_object()) put(r, m + "top1", row["eval"], "top1");
      put(r, m + "weight_bytes", row, "weight_bytes");
      put(r, m + "output_sqnr_db", row, "output_sqnr_db");
      put_energy(r, m, row.value("energy", nlohmann::json()));
    }
  } else if (kind == "sensitivity") {
    put(r, n + "fp32_top1", j, "fp32_top1");
    for (const auto& [v, a] : j.value("quant_top1", nlohmann::json::object()).items())
      if (a.is_number()) r.metrics[n + v + ".top1"] = a.get<double>();
    for (const auto& [v, m] : j.value("final_output", nlohmann::json::object()).items()) put(r, n + v + ".output_sqnr_db", m, "sqnr_db");
  } else if (kind == "prune") {
    for (const char* k : {"params_after", "flops_after", "nonzero_after"}) put(r, n + k, j, k);
  } else if (kind == "predict") {
    put(r, n + "latency_ms", j, "latency_ms");
    if (j.contains("energy_j") && j["energy_j"].is_number()) r.metrics[n + "energy_mj"] = j["energy_j"].get<double>() * 1e3;
    put(r, n + "weight_bytes", j, "weight_bytes");
  } else {
    // Any other workflow (automp, ...): its top-level numbers.
    for (const auto& [k, v] : j.items())
      if (v.is_number()) r.metrics[n + k] = v.get<double>();
  }
}

}  // namespace joule::experiment
