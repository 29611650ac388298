#include "joule/predict/predictor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "joule/core/error.h"
#include "joule/opdb/measure.h"
#include "joule/passes/annotate_costs.h"
#include "joule/predict/features.h"
#include "joule/predict/regressor.h"
#include "joule/profile/cpu_peak.h"
#include "joule/profile/energy/energy_meter.h"

namespace joule::predict {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kDispatchMs = 1e-3;

// One operator instance of the store: its rows in every regime together.
struct Entry {
  opdb::OpKey key;
  std::string algorithm;
  int threads = 1;
  double flops = 0, bytes = 0;
  std::map<std::string, double> ms;        // regime -> median
  std::map<std::string, double> energy_j;  // regime -> per call
  std::string energy_source;
  std::string group;  // the fold it belongs to in the out-of-fold check: its model origin, or ""
};

std::string id_of(const opdb::OpKey& k, const std::string& algorithm, int threads, const std::string& precision) {
  return k.text() + "|" + algorithm + "|" + std::to_string(threads) + "|" + precision;
}

// A regime's value of an entry: cold falls back to reused (no weights, or no cold row), mid
// is the geometric mean of reused and fresh; NaN when missing.
double pick(const std::map<std::string, double>& v, const std::string& regime) {
  auto get = [&](const std::string& r) {
    auto it = v.find(r);
    return it == v.end() ? kNaN : it->second;
  };
  if (regime == "mid") return std::sqrt(get("reused") * get("fresh"));
  if (regime == "cold" && std::isnan(get("cold"))) return get("reused");
  return get(regime);
}

// A view (the alias algorithm of Reshape, Flatten, Squeeze...) moves no bytes, whatever the op's
// cost annotation counts for a copy.
double moved_bytes(const std::string& algorithm, double bytes) { return algorithm == "alias" ? 0 : bytes; }

// The op a node's kernels compute: a fused node as its base op (FusedConv a Conv, the
// activation a feature of its own), Gemm and FusedMatMul a MatMul (the same GEMM kernels; the
// canonical M, N, K features describe each alike). What the regressor's op type feature sees.
std::string kernel_op(std::string op) {
  if (op.starts_with("joule.Fused")) op = op.substr(11);
  return op == "Gemm" ? "MatMul" : op;
}

const std::set<std::string> kRegimes = {"auto", "reused", "fresh", "cold", "mid"};  // asked for
const std::set<std::string> kMeasured = {"reused", "fresh", "cold"};                // isolated rows
}  // namespace

double cold_share(double weight_bytes, double llc_bytes) {
  if (llc_bytes <= 0) return 1;
  return std::clamp((weight_bytes / llc_bytes - 0.25) / 0.5, 0.0, 1.0);
}

// A regressor (none below min_rows) and the number of rows it learned from. (At namespace scope:
// clang refuses a nested struct's default member initializer inside the enclosing class's map.)
namespace {
struct Trained {
  std::optional<Regressor> r;
  size_t rows = 0;
  // Out-of-fold |log(predicted / measured)|: median and 90th percentile (NaN: too few rows).
  double err50 = std::numeric_limits<double>::quiet_NaN(), err90 = std::numeric_limits<double>::quiet_NaN();
};

constexpr int kFolds = 4;

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}
}  // namespace

struct Predictor::Impl {
  PredictorOptions o;
  std::string store_path;
  std::map<std::string, Entry> entries;
  std::vector<const Entry*> all;
  std::map<float, std::vector<const Entry*>> by_family;
  // A regressor (none below min_rows) and the rows it learned from, per "regime|family F" and
  // "regime|*" (every row).
  std::map<std::string, Trained> models;
  std::unique_ptr<profile::energy::EnergyMeter> estimator;

  // What the regressor corrects: the roofline time at the measured FP32 peak and bandwidth,
  // plus a dispatch's fixed cost. The regressor learns log(measured / base): a ratio that
  // varies far less across sizes than the time itself, so that a layer larger or smaller than
  // any row of its op type is scaled by its FLOPs and bytes rather than given the nearest
  // row's time (trees cannot extrapolate).
  double base_ms(double flops, double bytes, int threads) {
    auto& [peak, bw] = rates[threads];
    if (peak == 0) {
      peak = profile::peak_gflops(threads) * 1e9;
      bw = profile::peak_bandwidth_gbs(threads) * 1e9;
    }
    return kDispatchMs + 1e3 * std::max(peak > 0 ? flops / peak : 0.0, bw > 0 ? bytes / bw : 0.0);
  }
  std::map<int, std::pair<double, double>> rates;  // threads -> FP32 FLOP/s, bytes/s

  // Indices of op types and algorithms over the whole store (sorted: the same store gives the
  // same features); NaN for one the store has no row of.
  std::map<std::string, int> op_index, algo_index;
  static float index_of(const std::map<std::string, int>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(it->second);
  }
  std::vector<float> row(const opdb::OpKey& key, const std::string& algorithm, double flops, double bytes,
                         int threads) {
    return features(key, flops, bytes, threads, index_of(algo_index, algorithm),
                    index_of(op_index, kernel_op(key.op_type)), base_ms(flops, bytes, threads));
  }

  // The regressor a layer of `op_type` is predicted by in a regime: its family's (Conv with
  // FusedConv and the integer convs, MatMul with Gemm and FusedMatMul...: the same kernels, so
  // an op type few models use borrows its family's rows), or -- for a family with fewer than
  // min_rows rows -- the one trained on every row of the store (op type and family among its
  // features); trained on first use, nullptr when even the store has too few rows.
  const Trained* model(const std::string& op_type, const std::string& regime) {
    const float fam = family(op_type);
    const Trained& f = trained(fmt::format("{}|family {}", regime, fam), by_family[fam], regime);
    if (f.r) return &f;
    const Trained& w = trained(regime + "|*", all, regime);
    return w.r ? &w : nullptr;
  }
  const Trained& trained(const std::string& id, const std::vector<const Entry*>& rows, const std::string& regime) {
    auto it = models.find(id);
    if (it != models.end()) return it->second;
    Trained t;
    std::vector<std::vector<float>> X;
    std::vector<float> y;
    std::vector<int> fold;
    for (const Entry* e : rows)
      if (const double ms = pick(e->ms, regime); std::isfinite(ms) && ms > 0) {
        X.push_back(row(e->key, e->algorithm, e->flops, e->bytes, e->threads));
        y.push_back(static_cast<float>(std::log(ms / base_ms(e->flops, e->bytes, e->threads))));
        // A model's layers share a fold (it is predicted without any of them, as a model the
        // store has never seen); rows only the sweep made are dealt round the folds (the
        // sweep is always there).
        fold.push_back(static_cast<int>((e->group.empty() ? X.size() : std::hash<std::string>{}(e->group)) % kFolds));
      }
    t.rows = X.size();
    if (t.rows >= static_cast<size_t>(o.min_rows)) {
      RegressorParams p;
      p.rounds = 150;
      p.max_depth = 5;
      t.r = Regressor::train(X, y, p);
      // How sure: each fold predicted by a regressor trained without it.
      std::vector<double> err;
      const int folds = t.rows >= static_cast<size_t>(2 * o.min_rows) ? kFolds : 0;
      for (int f = 0; f < folds; ++f) {
        std::vector<std::vector<float>> Xin, Xout;
        std::vector<float> yin, yout;
        for (size_t i = 0; i < X.size(); ++i) {
          (fold[i] == f ? Xout : Xin).push_back(X[i]);
          (fold[i] == f ? yout : yin).push_back(y[i]);
        }
        if (Xout.empty() || Xin.size() < static_cast<size_t>(o.min_rows)) continue;
        const std::vector<float> pred = Regressor::train(Xin, yin, p).predict(Xout);
        for (size_t i = 0; i < pred.size(); ++i) err.push_back(std::abs(static_cast<double>(pred[i]) - yout[i]));
      }
      if (!err.empty()) {
        t.err50 = quantile(err, 0.5);
        t.err90 = quantile(err, 0.9);
      }
    }
    return models.emplace(id, std::move(t)).first->second;
  }

  // A layer's time in one regime: exact row, else the regressor, else nullopt.
  struct Value {
    double ms = kNaN;
    std::string source;
    std::optional<double> energy_j;
    size_t rows = 0;  // source model: the rows its regressor learned from
    double err50 = kNaN, err90 = kNaN;  // source model: its out-of-fold errors
  };
  Value value(const opdb::OpKey& key, const std::string& id, const std::string& algorithm, double flops,
              double bytes, int threads, const std::string& regime) {
    Value v;
    auto it = entries.find(id);
    if (it != entries.end() && std::isfinite(pick(it->second.ms, regime))) {
      v.ms = pick(it->second.ms, regime);
      v.source = "exact";
      if (const double e = pick(it->second.energy_j, regime); std::isfinite(e)) v.energy_j = e;
    } else if (const Trained* t = model(key.op_type, regime)) {
      v.ms = base_ms(flops, bytes, threads) * std::exp(t->r->predict(row(key, algorithm, flops, bytes, threads)));
      v.source = "model";
      v.rows = t->rows;
      v.err50 = t->err50;
      v.err90 = t->err90;
    }
    return v;
  }
};

Predictor::Predictor(const opdb::Store& db, PredictorOptions o) : impl_(std::make_unique<Impl>()) {
  JOULE_CHECK(kRegimes.count(o.regime), "unknown regime '" + o.regime + "' (auto, reused, fresh, cold, mid)");
  impl_->o = std::move(o);
  impl_->store_path = db.path();
  opdb::Filter f;
  f.cpu = opdb::this_cpu();
  f.isa = opdb::this_isa();
  f.joule_version = JOULE_VERSION;
  f.exclude_origins = impl_->o.exclude_origins;
  for (opdb::Row& r : db.rows(f)) {
    if (!kMeasured.count(r.regime)) continue;  // in-model rows are not predictions' input
    Entry& e = impl_->entries[id_of(r.op, r.algorithm, r.threads, r.precision)];
    e.key = r.op;
    e.algorithm = r.algorithm;
    e.threads = r.threads;
    e.flops = r.flops;
    e.bytes = moved_bytes(r.algorithm, r.bytes);
    e.ms[r.regime] = r.median_ms;
    for (const std::string& origin : r.origins)
      if (origin.starts_with("model:") && (e.group.empty() || origin < e.group)) e.group = origin;
    if (r.energy_j) {
      e.energy_j[r.regime] = *r.energy_j;
      e.energy_source = r.energy_source;
    }
  }
  for (auto& [id, e] : impl_->entries) {
    impl_->all.push_back(&e);
    impl_->by_family[family(e.key.op_type)].push_back(&e);
    impl_->algo_index.emplace(e.algorithm, 0);
    impl_->op_index.emplace(kernel_op(e.key.op_type), 0);
  }
  for (auto* m : {&impl_->algo_index, &impl_->op_index}) {
    int i = 0;
    for (auto& [name, index] : *m) index = i++;
  }
  try {
    impl_->estimator = profile::energy::open_meter("estimate");
  } catch (const Error&) {
  }
}

Predictor::~Predictor() = default;

size_t Predictor::rows() const { return impl_->entries.size(); }

Prediction Predictor::predict(const runtime::Session& s, const std::string& model_name) {
  Impl& im = *impl_;
  Prediction p;
  p.model = model_name;
  p.cpu = opdb::this_cpu();
  p.isa = opdb::this_isa();
  p.threads = s.threads();
  p.regime = im.o.regime;
  p.store = im.store_path;
  ir::Graph costed(s.graph());
  passes::annotate_costs(costed);
  std::unordered_map<const ir::Node*, size_t> index;
  for (size_t i = 0; i < s.graph().nodes.size(); ++i) index[s.graph().nodes[i].get()] = i;
  const double peak = profile::peak_gflops(p.threads) * 1e9, bw = profile::peak_bandwidth_gbs(p.threads) * 1e9;
  std::set<std::string> weights;
  std::vector<double> step_weights(s.num_steps(), 0.0);
  for (size_t step = 0; step < s.num_steps(); ++step)
    for (const std::string& in : s.step_node(step).inputs)
      if (!in.empty() && s.graph().is_initializer(in)) {
        const double b = static_cast<double>(s.graph().initializers.at(in).nbytes());
        step_weights[step] += b;
        if (weights.insert(in).second) p.weight_bytes += b;
      }
  const profile::Llc llc = profile::last_level_cache();
  const double llc_bytes = im.o.llc_bytes > 0 ? im.o.llc_bytes : double(llc.bytes) * llc.instances;
  p.cold_share = im.o.regime == "auto" ? cold_share(p.weight_bytes, llc_bytes) : 0;
  std::set<std::string> precisions, energy_sources;
  std::optional<double> uncertain_ms;  // the regressor-predicted layers' time x their median errors
  for (size_t step = 0; step < s.num_steps(); ++step) {
    const ir::Node& n = s.step_node(step);
    const auto& c = costed.nodes[index.at(&n)]->meta["common"];
    LayerPrediction L;
    L.step = step;
    L.name = n.name;
    const opdb::OpKey key = opdb::op_key(s.graph(), n);
    L.op_type = key.op_type;
    L.algorithm = n.meta["software"].value("algorithm", "reference");
    L.flops = c.value("flops", 0.0);
    L.bytes = moved_bytes(L.algorithm, c.value("bytes", 0.0));
    L.weight_bytes = step_weights[step];
    const std::string precision = opdb::precision_of(key, L.algorithm);
    precisions.insert(precision);
    const std::string id = id_of(key, L.algorithm, p.threads, precision);
    auto at = [&](const std::string& regime) {
      return im.value(key, id, L.algorithm, L.flops, L.bytes, p.threads, regime);
    };
    Impl::Value v = at(im.o.regime == "auto" ? "reused" : im.o.regime);
    if (im.o.regime == "auto" && p.cold_share > 0 && std::isfinite(v.ms)) {
      const Impl::Value c = at("cold");
      if (std::isfinite(c.ms)) {
        const double cap_ms = bw > 0 ? 2e3 * L.weight_bytes / bw : 0;
        v.ms += p.cold_share * std::clamp(c.ms - v.ms, 0.0, cap_ms);
        if (c.source != "exact") {
          v.source = c.source;
          v.rows = std::max(v.rows, c.rows);
          v.err50 = std::isnan(v.err50) ? c.err50 : std::max(v.err50, c.err50);
          v.err90 = std::isnan(v.err90) ? c.err90 : std::max(v.err90, c.err90);
        }
        if (v.energy_j && c.energy_j) *v.energy_j += p.cold_share * (*c.energy_j - *v.energy_j);
      }
    }
    if (std::isfinite(v.ms)) {
      L.source = v.source;
      if (v.source == "model") p.training_rows[L.op_type] = static_cast<int>(v.rows);
      if (v.source == "model" && std::isfinite(v.err50)) {
        L.error_p50_pct = 100 * std::expm1(v.err50);
        L.error_p90_pct = 100 * std::expm1(v.err90);
        uncertain_ms = uncertain_ms.value_or(0) + v.ms * *L.error_p50_pct / 100;
      }
      L.latency_ms = v.ms;
      if ((L.energy_j = v.energy_j)) L.energy_source = im.entries.at(id).energy_source;
    } else {
      L.source = "roofline";
      L.latency_ms = 1e3 * std::max(peak > 0 ? L.flops / peak : 0.0, bw > 0 ? L.bytes / bw : 0.0);
    }
    if (!L.energy_j && im.estimator) {
      L.energy_j = im.estimator->model_joules(L.latency_ms / 1e3, L.flops, L.bytes);
      if (L.energy_j) L.energy_source = im.estimator->source();
    }
    if (L.energy_j) {
      p.energy_j = p.energy_j.value_or(0) + *L.energy_j;
      energy_sources.insert(L.energy_source);
    }
    p.latency_ms += L.latency_ms;
    ++p.coverage_layers[L.source];
    p.coverage_pct[L.source] += L.latency_ms;
    p.layers.push_back(std::move(L));
  }
  if (uncertain_ms && p.latency_ms > 0) p.expected_error_pct = 100 * *uncertain_ms / p.latency_ms;
  for (auto& [src, ms] : p.coverage_pct) ms = p.latency_ms > 0 ? 100.0 * ms / p.latency_ms : 0;
  for (const char* src : {"exact", "model", "roofline"}) {
    p.coverage_pct.emplace(src, 0.0);
    p.coverage_layers.emplace(src, 0);
  }
  p.precision = precisions.size() == 1 ? *precisions.begin() : precisions.empty() ? "fp32" : "mixed";
  if (energy_sources.size() == 1) {
    p.energy_source = *energy_sources.begin();
  } else if (!energy_sources.empty()) {
    p.energy_source = "mixed:";
    for (auto& e : energy_sources) p.energy_source += " " + e;
  }
  return p;
}

std::string Prediction::coverage_text() const {
  return fmt::format("exact rows {:.1f}% ({} layers), regressor {:.1f}% ({}), roofline bound {:.1f}% ({})",
                     coverage_pct.at("exact"), coverage_layers.at("exact"), coverage_pct.at("model"),
                     coverage_layers.at("model"), coverage_pct.at("roofline"), coverage_layers.at("roofline"));
}

nlohmann::json Prediction::to_json() const {
  nlohmann::json layers_j = nlohmann::json::array();
  for (auto& L : layers) {
    nlohmann::json l = {{"name", L.name},          {"op_type", L.op_type}, {"algorithm", L.algorithm},
                        {"latency_ms", L.latency_ms}, {"source", L.source},  {"flops", L.flops},
                        {"bytes", L.bytes},           {"weight_bytes", L.weight_bytes}};
    l["energy_j"] = L.energy_j ? nlohmann::json(*L.energy_j) : nlohmann::json(nullptr);
    if (L.error_p50_pct) {
      l["error_p50_pct"] = *L.error_p50_pct;
      l["error_p90_pct"] = *L.error_p90_pct;
    }
    if (L.energy_j) l["energy_source"] = L.energy_source;
    layers_j.push_back(l);
  }
  nlohmann::json cov;
  for (auto& [src, pct] : coverage_pct) cov[src] = {{"time_pct", pct}, {"layers", coverage_layers.at(src)}};
  return {{"model", model},
          {"latency_ms", latency_ms},
          {"energy_j", energy_j ? nlohmann::json(*energy_j) : nlohmann::json(nullptr)},
          {"energy_source", energy_source},
          {"threads", threads},
          {"precision", precision},
          {"regime", regime},
          {"weight_bytes", weight_bytes},
          {"cold_share", cold_share},
          {"cpu", cpu},
          {"isa", isa},
          {"store", store},
          {"training_rows", training_rows},
          {"expected_error_pct", expected_error_pct ? nlohmann::json(*expected_error_pct) : nlohmann::json(nullptr)},
          {"coverage", cov},
          {"layers", layers_j}};
}

}  // namespace joule::predict
