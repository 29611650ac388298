#include "joule/quant/sensitivity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "joule/core/error.h"
#include "joule/data/evaluate.h"
#include "joule/report/plot.h"

namespace joule::quant {

namespace {

nlohmann::json number(double v) {
  if (std::isnan(v)) return nullptr;
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

std::string fmt_db(double v) {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.2f}", v);
}

bool keep_role(const std::string& variant, Role r) {
  if (variant == "weights") return r == Role::Weight || r == Role::Bias;
  if (variant == "activations") return r == Role::Input || r == Role::Output;
  return true;
}

runtime::SessionOptions session_options(int threads) {
  runtime::SessionOptions so;
  so.threads = threads;
  return so;
}

// Keeps copies of the named values of one run.
class Capture : public runtime::Observer {
 public:
  explicit Capture(const std::map<std::string, size_t>& names) : names_(names), values_(names.size()) {}
  bool reads_inputs_after() const override { return false; }
  void after_node(size_t, const ir::Node& n, const std::vector<const Tensor*>&, const std::vector<Tensor>& out) override {
    for (size_t i = 0; i < n.outputs.size() && i < out.size(); ++i) {
      auto it = names_.find(n.outputs[i]);
      if (it != names_.end() && out[i].defined() && out[i].dtype() == DType::Float32) values_[it->second] = out[i].clone();
    }
  }
  std::vector<Tensor>& values() { return values_; }

 private:
  const std::map<std::string, size_t>& names_;
  std::vector<Tensor> values_;
};

const Tensor& first_output(const runtime::Session& s, const runtime::TensorMap& out) {
  return out.at(s.output_names().at(0));
}

}  // namespace

nlohmann::json Metrics::to_json() const {
  return {{"sqnr_db", number(sqnr_db)}, {"cosine", number(cosine)}, {"mse", number(mse)},
          {"max_abs", number(max_abs)}, {"samples", samples}};
}

void MetricsAccumulator::add(const Tensor& ref, const Tensor& q) {
  JOULE_CHECK(ref.shape() == q.shape(), "sensitivity: compared tensors differ in shape: " + ref.describe() + " vs " +
                                            q.describe());
  const float* a = ref.data<float>();
  const float* b = q.data<float>();
  double s = 0, e = 0, dot = 0, bb = 0, mx = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double x = a[i], y = b[i], d = x - y;
    s += x * x;
    e += d * d;
    dot += x * y;
    bb += y * y;
    mx = std::max(mx, std::abs(d));
  }
  signal_ += s;
  noise_ += e;
  // Two zero vectors are identical (cosine 1); one zero vector has no direction (cosine 0).
  cos_sum_ += (s == 0 && bb == 0) ? 1.0 : (s == 0 || bb == 0) ? 0.0 : dot / std::sqrt(s * bb);
  mse_sum_ += ref.numel() ? e / static_cast<double>(ref.numel()) : 0.0;
  max_abs_ = std::max(max_abs_, mx);
  ++n_;
}

Metrics MetricsAccumulator::result() const {
  Metrics m;
  m.samples = n_;
  if (n_ == 0) return m;
  m.sqnr_db = noise_ == 0 ? std::numeric_limits<double>::infinity() : 10.0 * std::log10(signal_ / noise_);
  m.cosine = cos_sum_ / static_cast<double>(n_);
  m.mse = mse_sum_ / static_cast<double>(n_);
  m.max_abs = max_abs_;
  return m;
}

SensitivityMode sensitivity_mode_from_name(const std::string& s) {
  if (s == "cumulative") return SensitivityMode::Cumulative;
  if (s == "isolated") return SensitivityMode::Isolated;
  fail("--mode: expected cumulative or isolated, got '" + s + "'");
}

const std::vector<std::string>& sensitivity_variants() {
  static const std::vector<std::string> v{"all", "weights", "activations"};
  return v;
}

SensitivityReport sensitivity(const ir::Graph& g, const QuantPlan& plan, const std::vector<runtime::TensorMap>& samples,
                              const std::vector<int64_t>& labels, const SensitivityOptions& o) {
  if (samples.empty()) fail("sensitivity: no samples to compare over");
  JOULE_CHECK(labels.empty() || labels.size() == samples.size(), "sensitivity: labels and samples differ in count");
  for (const std::string& v : o.variants)
    if (std::find(sensitivity_variants().begin(), sensitivity_variants().end(), v) == sensitivity_variants().end())
      fail("sensitivity: unknown variant '" + v + "' (all, weights, activations)");
  SensitivityReport r;
  r.mode = o.mode;
  r.variants = o.variants;
  r.samples = samples.size();
  std::map<std::string, size_t> watched;  // layer output value -> layer index
  for (size_t i = 0; i < plan.choices.size(); ++i) {
    const ir::Node& n = *g.nodes[plan.choices[i].node];
    LayerSensitivity L;
    L.node = n.name;
    L.op = n.op_type;
    L.tensor = n.outputs.empty() ? "" : n.outputs[0];
    L.order = i;
    if (!L.tensor.empty()) watched.emplace(L.tensor, i);
    r.layers.push_back(std::move(L));
  }

  // The FP32 reference: final outputs and (cumulative) every layer output, per sample.
  runtime::Session fp32(g, session_options(o.threads));
  std::vector<Tensor> ref_final;
  std::vector<std::vector<Tensor>> ref_layers;
  size_t correct = 0;
  for (size_t s = 0; s < samples.size(); ++s) {
    Capture cap(watched);
    if (o.mode == SensitivityMode::Cumulative) fp32.add_observer(&cap);
    runtime::TensorMap out = fp32.run(samples[s]);
    fp32.clear_observers();
    ref_final.push_back(first_output(fp32, out).clone());
    if (o.mode == SensitivityMode::Cumulative) ref_layers.push_back(std::move(cap.values()));
    if (!labels.empty()) correct += data::top_k_correct(ref_final.back(), labels[s], 1);
  }
  if (!labels.empty()) r.fp32_accuracy = static_cast<double>(correct) / static_cast<double>(samples.size());

  // Runs one quantized graph over the samples; compares final outputs (and layer outputs).
  auto run_variant = [&](const QuantPlan& sub, std::vector<MetricsAccumulator>* layers, MetricsAccumulator& final_acc,
                         double* accuracy) {
    runtime::Session qs(insert_qdq(g, sub), session_options(o.threads));
    size_t ok = 0;
    for (size_t s = 0; s < samples.size(); ++s) {
      Capture cap(watched);
      if (layers) qs.add_observer(&cap);
      runtime::TensorMap out = qs.run(samples[s]);
      qs.clear_observers();
      const Tensor& y = first_output(qs, out);
      final_acc.add(ref_final[s], y);
      if (!labels.empty()) ok += data::top_k_correct(y, labels[s], 1);
      if (layers)
        for (size_t i = 0; i < layers->size(); ++i)
          if (cap.values()[i].defined() && ref_layers[s][i].defined()) (*layers)[i].add(ref_layers[s][i], cap.values()[i]);
    }
    if (accuracy && !labels.empty()) *accuracy = static_cast<double>(ok) / static_cast<double>(samples.size());
  };

  for (const std::string& v : o.variants) {
    if (o.mode == SensitivityMode::Cumulative) {
      if (o.progress) o.progress("cumulative, " + v);
      QuantPlan sub = plan.subset([](size_t) { return true; }, [&](Role role) { return keep_role(v, role); });
      std::vector<MetricsAccumulator> acc(r.layers.size());
      MetricsAccumulator fin;
      double accuracy = 0;
      run_variant(sub, &acc, fin, &accuracy);
      for (size_t i = 0; i < r.layers.size(); ++i) r.layers[i].metrics[v] = acc[i].result();
      r.final_output[v] = fin.result();
      if (!labels.empty()) r.quant_accuracy[v] = accuracy;
    } else {
      for (size_t i = 0; i < r.layers.size(); ++i) {
        const size_t node = plan.choices[i].node;
        QuantPlan sub = plan.subset([&](size_t n) { return n == node; }, [&](Role role) { return keep_role(v, role); });
        if (sub.points.empty()) continue;  // nothing of this variant to quantize in this layer
        if (o.progress) o.progress(fmt::format("isolated, {}: layer {}/{} {}", v, i + 1, r.layers.size(), r.layers[i].node));
        MetricsAccumulator fin;
        double accuracy = 0;
        run_variant(sub, nullptr, fin, &accuracy);
        r.layers[i].metrics[v] = fin.result();
        if (!labels.empty()) r.layers[i].accuracy[v] = accuracy;
      }
    }
  }
  return r;
}

nlohmann::json SensitivityReport::to_json() const {
  nlohmann::json j;
  j["schema"] = 1;
  j["mode"] = mode == SensitivityMode::Cumulative ? "cumulative" : "isolated";
  j["variants"] = variants;
  j["samples"] = samples;
  j["metric_definitions"] = {
      {"sqnr_db", "10*log10(sum ref^2 / sum (ref-quant)^2), sums over all samples"},
      {"cosine", "mean over samples of the cosine similarity of the flattened tensors"},
      {"mse", "mean over samples of the mean squared error"},
      {"max_abs", "largest absolute error over all samples"},
      {"compared", mode == SensitivityMode::Cumulative ? "each layer's output, whole model quantized"
                                                       : "the model's first output, only this layer quantized"}};
  if (fp32_accuracy) j["fp32_top1"] = *fp32_accuracy;
  for (auto& [v, a] : quant_accuracy) j["quant_top1"][v] = a;
  for (auto& [v, m] : final_output) j["final_output"][v] = m.to_json();
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerSensitivity& L : this->layers) {
    nlohmann::json l{{"node", L.node}, {"op", L.op}, {"tensor", L.tensor}, {"order", L.order}};
    for (auto& [v, m] : L.metrics) l["metrics"][v] = m.to_json();
    for (auto& [v, a] : L.accuracy) l["top1"][v] = a;
    layers.push_back(std::move(l));
  }
  j["layers"] = layers;
  return j;
}

namespace {
double sqnr_of(const LayerSensitivity& L, const std::string& v) {
  auto it = L.metrics.find(v);
  return it == L.metrics.end() ? std::numeric_limits<double>::quiet_NaN() : it->second.sqnr_db;
}
}  // namespace

std::string SensitivityReport::table(size_t top) const {
  std::vector<const LayerSensitivity*> rows;
  for (auto& L : layers) rows.push_back(&L);
  const std::string key = variants.empty() ? "all" : variants[0];
  // Most damaged first: lowest SQNR; layers without a value last.
  std::stable_sort(rows.begin(), rows.end(), [&](const LayerSensitivity* a, const LayerSensitivity* b) {
    const double x = sqnr_of(*a, key), y = sqnr_of(*b, key);
    if (std::isnan(x) != std::isnan(y)) return std::isnan(y);
    return x < y;
  });
  if (top && rows.size() > top) rows.resize(top);
  size_t wn = 5, wo = 2;
  for (auto* L : rows) {
    wn = std::max(wn, L->node.size());
    wo = std::max(wo, L->op.size());
  }
  std::string s = fmt::format("{:<4}  {:<{}}  {:<{}}", "rank", "layer", wn, "op", wo);
  for (auto& v : variants) s += fmt::format("  {:>16}", "SQNR dB " + v);
  s += fmt::format("  {:>9}  {:>10}  {:>10}", "cosine", "MSE", "max|err|");
  const bool acc = !rows.empty() && !rows[0]->accuracy.empty();
  if (acc) s += fmt::format("  {:>8}", "top-1");
  s += "\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const LayerSensitivity& L = *rows[i];
    s += fmt::format("{:<4}  {:<{}}  {:<{}}", i + 1, L.node, wn, L.op, wo);
    for (auto& v : variants) s += fmt::format("  {:>16}", fmt_db(sqnr_of(L, v)));
    auto it = L.metrics.find(key);
    if (it != L.metrics.end())
      s += fmt::format("  {:>9.5f}  {:>10.4g}  {:>10.4g}", it->second.cosine, it->second.mse, it->second.max_abs);
    if (acc) {
      auto a = L.accuracy.find(key);
      s += a == L.accuracy.end() ? fmt::format("  {:>8}", "-") : fmt::format("  {:>7.2f}%", 100 * a->second);
    }
    s += "\n";
  }
  return s;
}

std::string SensitivityReport::csv() const {
  std::string s = "order,node,op,tensor,variant,sqnr_db,cosine,mse,max_abs,samples,top1\n";
  for (const LayerSensitivity& L : layers)
    for (const std::string& v : variants) {
      auto it = L.metrics.find(v);
      if (it == L.metrics.end()) continue;
      const Metrics& m = it->second;
      auto a = L.accuracy.find(v);
      s += fmt::format("{},\"{}\",{},\"{}\",{},{},{},{},{},{},{}\n", L.order, L.node, L.op, L.tensor, v,
                       fmt_db(m.sqnr_db), m.cosine, m.mse, m.max_abs, m.samples,
                       a == L.accuracy.end() ? "" : fmt::format("{}", a->second));
    }
  return s;
}

plot::BarChart sensitivity_chart(const nlohmann::json& r, const std::string& title) {
  plot::BarChart c;
  c.title = fmt::format("{} (SQNR dB per layer, graph order; {} samples)", title, r.value("samples", 0));
  c.value_label = "SQNR dB (higher: less damage)";
  auto sqnr = [](const nlohmann::json& l, const std::string& v) {
    if (!l.contains("metrics") || !l["metrics"].contains(v)) return plot::kMissing;
    const nlohmann::json& x = l["metrics"][v]["sqnr_db"];
    if (x.is_number()) return x.get<double>();
    if (x.is_string()) return x.get<std::string>() == "inf" ? HUGE_VAL : -HUGE_VAL;
    return plot::kMissing;
  };
  const nlohmann::json layers = r.value("layers", nlohmann::json::array());
  const std::vector<std::string> variants = r.value("variants", std::vector<std::string>{});
  double hi = 10;
  for (const auto& l : layers)
    for (const std::string& v : variants)
      if (std::isfinite(sqnr(l, v))) hi = std::max(hi, sqnr(l, v));
  c.value_max = std::ceil(hi / 10) * 10;
  for (const auto& l : layers) c.categories.push_back(l.value("node", ""));
  for (const std::string& v : variants) {
    plot::Series s{v, {}, {}, {}, {}};
    for (const auto& l : layers) {
      const double x = sqnr(l, v);
      s.y.push_back(std::isinf(x) ? (x > 0 ? c.value_max : 0.0) : std::isnan(x) ? plot::kMissing : std::max(0.0, x));
      s.tips.push_back(std::isnan(x) ? "" : fmt_db(x) + " dB");
    }
    c.series.push_back(std::move(s));
  }
  return c;
}

std::string SensitivityReport::svg(const std::string& title) const { return plot::bars(sensitivity_chart(to_json(), title)); }

}  // namespace joule::quant
