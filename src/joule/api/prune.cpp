#include "joule/api/prune.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/quant/sensitivity.h"
#include "joule/report/plot.h"
#include "joule/runtime/inputs.h"
#include "joule/runtime/session.h"

namespace joule::api {

nlohmann::json PruneResult::to_json() const {
  nlohmann::json j = report.to_json();
  j["model"] = model.name();
  if (!finetune.is_null()) j["finetune"] = finetune;
  return j;
}

PruneResult prune(const Model& m, const prune::PruneOptions& o, const TrainOptions* finetune, const Hooks& hooks) {
  ir::Graph g = m.graph();
  PruneResult r{Model(), prune::prune_graph(g, o), nullptr};
  r.model = m.derived(std::move(g), m.name() + "_pruned");
  if (finetune) {
    TrainOptions ft = *finetune;
    ft.keep_zeros = ft.keep_zeros || !o.structured;  // the pruned weights stay zero
    TrainReport t = train(r.model, ft, hooks);
    r.model = m.derived(ir::Graph(t.model.graph()), m.name() + "_pruned");
    r.finetune = std::move(t.json);
  }
  return r;
}

}  // namespace joule::api

namespace joule::api {

namespace {
size_t argmax(const Tensor& t) {
  const float* p = t.data<float>();
  return static_cast<size_t>(std::max_element(p, p + t.numel()) - p);
}
}  // namespace

PruneSensitivityResult prune_sensitivity(const Model& m, const PruneSensitivityOptions& o, const Hooks& hooks) {
  if (o.ratios.empty()) fail("prune sensitivity: give at least one ratio");
  if (o.samples < 1) fail("prune sensitivity: samples must be at least 1");
  const ir::Graph& g = m.graph();
  runtime::SessionOptions so;
  so.threads = o.threads;
  runtime::Session ref(g, so);
  // The samples, and the unpruned model's first output on each.
  std::vector<runtime::TensorMap> inputs;
  std::vector<int64_t> labels;
  std::string data = "seeded random inputs";
  if (!o.data.empty()) {
    std::unique_ptr<data::Dataset> d = open_data(o.data, m, o.preprocess);
    LoadedSamples s = load_samples(*d, g.inputs[0], o.samples);
    inputs = std::move(s.inputs);
    labels = std::move(s.labels);
    data = d->describe();
  } else {
    for (size_t i = 0; i < o.samples; ++i) inputs.push_back(runtime::random_inputs(ref, static_cast<uint32_t>(i)));
  }
  const std::string out = g.outputs.at(0);
  std::vector<Tensor> expected;
  for (const auto& in : inputs) expected.push_back(ref.run(in).at(out).clone());

  // The layers: those pruning would touch at the first ratio.
  prune::PruneOptions po;
  po.structured = o.structured;
  po.criterion = o.criterion;
  po.ratio = o.ratios.front();
  std::vector<std::pair<std::string, std::string>> layers;
  {
    ir::Graph probe = g;
    for (const auto& l : prune::prune_graph(probe, po).layers)
      if (l.kept_because.empty()) layers.emplace_back(l.node, l.op);
  }
  nlohmann::json jl = nlohmann::json::array();
  size_t done = 0;
  for (const auto& [node, op] : layers) {
    nlohmann::json lj = {{"node", node}, {"op", op}, {"ratios", nlohmann::json::object()}};
    for (double r : o.ratios) {
      hooks.report("prune sensitivity", done++, layers.size() * o.ratios.size(),
                   fmt::format("prune sensitivity: {} at {}", node, r));
      ir::Graph p = g;
      po.ratio = r;
      po.only = {node};
      const prune::PruneReport rep = prune::prune_graph(p, po);
      runtime::Session s(std::move(p), so);
      quant::MetricsAccumulator acc;
      size_t correct = 0;
      for (size_t i = 0; i < inputs.size(); ++i) {
        const Tensor y = s.run(inputs[i]).at(out);
        acc.add(expected[i], y);
        if (!labels.empty()) correct += static_cast<int64_t>(argmax(y)) == labels[i];
      }
      nlohmann::json rj = acc.result().to_json();
      rj["params_removed"] = rep.params_before - rep.params_after;
      rj["nonzero_removed"] = rep.nonzero_before - rep.nonzero_after;
      if (!labels.empty()) rj["top1"] = static_cast<double>(correct) / static_cast<double>(labels.size());
      lj["ratios"][fmt::format("{:g}", r)] = rj;
    }
    jl.push_back(std::move(lj));
  }
  PruneSensitivityResult res;
  res.json = {{"model", m.path().empty() ? m.name() : m.path()},
              {"structured", o.structured},
              {"criterion", o.criterion},
              {"ratios", o.ratios},
              {"samples", inputs.size()},
              {"data", data},
              {"compared", "the model's first output, only this layer pruned"},
              {"layers", jl}};
  if (!labels.empty()) {
    size_t correct = 0;
    for (size_t i = 0; i < inputs.size(); ++i) correct += static_cast<int64_t>(argmax(expected[i])) == labels[i];
    res.json["unpruned_top1"] = static_cast<double>(correct) / static_cast<double>(labels.size());
  }
  // Table: most damaged first at the middle ratio.
  const std::string mid = fmt::format("{:g}", o.ratios[o.ratios.size() / 2]);
  std::vector<const nlohmann::json*> rows;
  for (const auto& l : res.json["layers"]) rows.push_back(&l);
  auto db = [](const nlohmann::json& v) {
    return v.is_number() ? v.get<double>() : v.is_string() && v.get<std::string>() == "inf" ? HUGE_VAL : NAN;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](auto* a, auto* b) {
    return db((*a)["ratios"][mid]["sqnr_db"]) < db((*b)["ratios"][mid]["sqnr_db"]);
  });
  size_t w = 4;
  for (auto* l : rows) w = std::max(w, (*l)["node"].get<std::string>().size());
  res.table = fmt::format("{:<{}}", "node", w);
  for (double r : o.ratios) res.table += fmt::format("  {:>12}", fmt::format("SQNR@{:g}", r));
  res.table += "\n";
  for (auto* l : rows) {
    res.table += fmt::format("{:<{}}", (*l)["node"].get<std::string>(), w);
    for (double r : o.ratios) {
      const double v = db((*l)["ratios"][fmt::format("{:g}", r)]["sqnr_db"]);
      res.table += fmt::format("  {:>12}", std::isnan(v) ? "-" : std::isinf(v) ? "inf" : fmt::format("{:.2f}", v));
    }
    res.table += "\n";
  }
  plot::BarChart c;
  c.title = fmt::format("{}: output SQNR with one layer pruned ({}, {}; {} samples)", m.name(),
                        o.structured ? "output channels" : "weights", o.criterion, inputs.size());
  c.value_label = "SQNR dB (higher: less damage)";
  for (const auto& l : res.json["layers"]) c.categories.push_back(l["node"].get<std::string>());
  for (double r : o.ratios) {
    plot::Series s{fmt::format("ratio {:g}", r), {}, {}, {}, {}};
    for (const auto& l : res.json["layers"]) {
      const double v = db(l["ratios"][fmt::format("{:g}", r)]["sqnr_db"]);
      s.y.push_back(std::isnan(v) ? plot::kMissing : std::isinf(v) ? 60.0 : std::max(0.0, v));
    }
    c.series.push_back(std::move(s));
  }
  res.svg = plot::bars(c);
  if (!o.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.out_dir, ec);
    if (ec) fail(o.out_dir + ": cannot create directory: " + ec.message());
    write_file_atomic(o.out_dir + "/prune_sensitivity.json", res.json.dump(2) + "\n");
    std::string csv = "node,op,ratio,sqnr_db,cosine,top1,params_removed\n";
    for (const auto& l : res.json["layers"])
      for (const auto& [r, v] : l["ratios"].items())
        csv += fmt::format("\"{}\",{},{},{},{},{},{}\n", l["node"].get<std::string>(), l["op"].get<std::string>(), r,
                           v["sqnr_db"].dump(), v["cosine"].dump(), v.contains("top1") ? v["top1"].dump() : "",
                           v["params_removed"].dump());
    write_file_atomic(o.out_dir + "/prune_sensitivity.csv", csv);
    write_file_atomic(o.out_dir + "/prune_sensitivity.svg", res.svg);
  }
  return res;
}

}  // namespace joule::api
