#include "joule/report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "joule/api/info.h"
#include "joule/api/model.h"
#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/core/sqlite.h"
#include "joule/ir/printer.h"
#include "joule/passes/infer_shapes.h"
#include "joule/quant/sensitivity.h"
#include "joule/report/plot.h"

namespace joule::report {

namespace fs = std::filesystem;
using experiment::RunRow;
using plot::xml_escape;

namespace {

RunRow from_result_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("point")) fail(where + ": not a run's result.json");
  RunRow r;
  r.id = j.value("id", int64_t{0});
  r.experiment = j.value("experiment", "");
  r.point = j.value("point", "");
  r.command = j.value("command", "");
  r.model = j.value("model", "");
  r.params = j.value("params", nlohmann::json::object());
  r.status = j.value("status", "");
  r.error = j.value("error", "");
  r.result = j.value("result", nlohmann::json::object());
  r.metrics = j.value("metrics", std::map<std::string, double>{});
  for (const auto& l : j.value("layers", nlohmann::json::array()))
    r.layers.push_back({l.value("name", ""), l.value("op", ""), l.value("algorithm", ""), l.value("ms", 0.0),
                        l.value("pct", 0.0)});
  r.run_dir = j.value("run_dir", "");
  r.joule_version = j.value("joule_version", "");
  r.cpu = j.value("cpu", "");
  r.isa = j.value("isa", "");
  r.host = j.value("host", "");
  r.started = j.value("started", "");
  r.finished = j.value("finished", "");
  r.wall_s = j.value("wall_s", 0.0);
  return r;
}

// A parameter's value as text (experiments' are strings; a command's may be anything).
std::string param(const RunRow& r, const std::string& k) {
  if (!r.params.contains(k)) return "";
  const nlohmann::json& v = r.params[k];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

double metric(const RunRow& r, const std::string& name) {
  auto it = r.metrics.find(name);
  return it == r.metrics.end() ? plot::kMissing : it->second;
}

bool ends_with(const std::string& s, const std::string& t) {
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

// The first metric present in some run among `preferred`, else the first name ending in `suffix`.
std::string pick(const std::set<std::string>& names, std::initializer_list<const char*> preferred,
                 const std::string& suffix) {
  for (const char* p : preferred)
    if (names.count(p)) return p;
  for (const std::string& n : names)
    if (ends_with(n, suffix) && std::count(n.begin(), n.end(), '.') == 1) return n;
  return "";
}

std::string label_of(const RunRow& r, const std::vector<std::string>& axes, const std::string& skip = "") {
  std::string s;
  for (const std::string& a : axes) {
    if (a == skip || !r.params.contains(a)) continue;
    s += (s.empty() ? "" : " ") + (a == "model" ? "" : a + "=") + param(r, a);
  }
  return s.empty() ? r.point : s;
}

bool is_number(const std::string& s, double* v) {
  try {
    size_t used = 0;
    *v = std::stod(s, &used);
    return used == s.size();
  } catch (...) {
    return false;
  }
}

std::string fmt_metric(const std::string& name, double v) {
  if (!std::isfinite(v)) return "";
  if (ends_with(name, "bytes")) return fmt::format("{:.3g} MB", v / 1e6);
  if (ends_with(name, "top1") || ends_with(name, "top5")) return fmt::format("{:.2f}%", 100 * v);
  if (std::abs(v) >= 100) return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

const char* kStyle = R"css(
body{font-family:sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:14px;margin:18px 0 6px}
table{border-collapse:collapse;font-size:12px;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3;cursor:pointer;user-select:none}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.failed{color:#b00}.running{color:#a60}.note{color:#666;font-size:12px}
.charts{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
details{margin:4px 0}summary{cursor:pointer}
pre{background:#f7f7f7;padding:8px;overflow-x:auto;font-size:11px;max-height:360px}
)css";

// Click a header to sort the table by that column (numbers numerically).
const char* kScript = R"js(
document.querySelectorAll('table.sortable th').forEach(function(th, col) {
  th.addEventListener('click', function() {
    var table = th.closest('table'), body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var dir = th.dataset.dir === 'asc' ? -1 : 1;
    th.dataset.dir = dir === 1 ? 'asc' : 'desc';
    rows.sort(function(a, b) {
      var x = a.cells[col].dataset.v !== undefined ? a.cells[col].dataset.v : a.cells[col].textContent;
      var y = b.cells[col].dataset.v !== undefined ? b.cells[col].dataset.v : b.cells[col].textContent;
      var nx = parseFloat(x), ny = parseFloat(y);
      if (!isNaN(nx) && !isNaN(ny)) return dir * (nx - ny);
      return dir * x.localeCompare(y);
    });
    rows.forEach(function(r) { body.appendChild(r); });
  });
});
)js";

// The model file a run measured: its experiment point's config.json, else the path a command's
// result names. "" when neither is there.
std::string model_file(const RunRow& r) {
  std::error_code ec;
  const fs::path cfg = fs::path(r.run_dir) / "config.json";
  if (!r.run_dir.empty() && fs::is_regular_file(cfg, ec)) {
    try {
      return nlohmann::json::parse(read_file(cfg.string()))["model"].value("path", "");
    } catch (const std::exception&) {
      return "";
    }
  }
  for (const auto& [step, res] : r.result.items())
    if (res.is_object() && res.contains("model") && res["model"].is_string() &&
        fs::is_regular_file(res["model"].get<std::string>(), ec))
      return res["model"].get<std::string>();
  return "";
}

// The graph of a profiled run's model, each node filled by its time (white to orange), as SVG;
// "" (with a note) when the model or Graphviz is not there or the graph is too large to read.
std::string cost_graph(const RunRow& r, const std::string& title) {
  const std::string path = model_file(r);
  if (path.empty()) return "";
  try {
    ir::Graph g = api::Model::load(path).graph();
    if (g.nodes.size() > 400)
      return fmt::format("<p class=\"note\">{}: {} nodes, too many to draw legibly</p>\n", xml_escape(title), g.nodes.size());
    try {
      passes::infer_shapes(g);
    } catch (const Error&) {
    }
    std::map<std::string, const experiment::LayerRow*> by_name;
    double hi = 0;
    for (const auto& l : r.layers) {
      by_name[l.name] = &l;
      hi = std::max(hi, l.ms);
    }
    const std::string dot = ir::to_dot(g, [&](const ir::Node& n) {
      auto it = by_name.find(n.name);
      if (it == by_name.end())
        return std::string("fillcolor=\"#eeeeee\", tooltip=\"") + ir::dot_escape(n.name) +
               ": no time of its own (fused into a neighbour, or folded away)\"";
      const experiment::LayerRow& l = *it->second;
      const double f = hi > 0 ? std::clamp(l.ms / hi, 0.0, 1.0) : 0;
      const int rr = static_cast<int>(255 - f * (255 - 217)), gg = static_cast<int>(245 - f * (245 - 72)),
                bb = static_cast<int>(235 - f * 234);
      return fmt::format("fillcolor=\"#{:02x}{:02x}{:02x}\", tooltip=\"{}: {}, {}, {:.4g} ms ({:.1f}%)\"", rr, gg, bb,
                         ir::dot_escape(l.name), ir::dot_escape(l.op), ir::dot_escape(l.algorithm), l.ms, l.pct);
    });
    std::string svg = api::render_dot(dot, "svg");
    const size_t at = svg.find("<svg");
    if (at == std::string::npos) return "";
    return "<h3>" + xml_escape(title) + "</h3>\n<div style=\"max-height:900px;overflow:auto;border:1px solid #ddd\">" +
           svg.substr(at) + "</div>\n";
  } catch (const Error& e) {
    return fmt::format("<p class=\"note\">{}: graph not drawn ({})</p>\n", xml_escape(title), xml_escape(e.what()));
  }
}

}  // namespace

std::vector<RunRow> report_runs(const ReportOptions& o) {
  std::vector<RunRow> runs;
  if (!o.run_dirs.empty()) {
    for (const std::string& d : o.run_dirs) {
      const std::string f = fs::is_directory(d) ? (fs::path(d) / "result.json").string() : d;
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(read_file(f));
      } catch (const nlohmann::json::exception& e) {
        fail(f + ": not valid JSON: " + e.what());
      }
      runs.push_back(from_result_json(j, f));
    }
  } else {
    experiment::ResultsStore store(o.store);
    experiment::RunFilter f;
    f.experiment = o.experiment;
    f.any_experiment = o.experiment.empty();
    f.with_layers = true;
    runs = store.runs(f);
    if (runs.empty())
      fail(o.store + ": no runs" + (o.experiment.empty() ? "" : " of experiment '" + o.experiment + "'"));
  }
  return runs;
}

std::string report_html(const ReportOptions& o) {
  const std::vector<RunRow> runs = report_runs(o);
  std::string title = o.title;
  if (title.empty())
    title = !o.experiment.empty() ? "joule experiment " + o.experiment
            : !runs[0].experiment.empty() && std::all_of(runs.begin(), runs.end(), [&](const RunRow& r) {
                return r.experiment == runs[0].experiment;
              })
                ? "joule experiment " + runs[0].experiment
                : "joule runs";

  // Axes (parameter names in order of first appearance, model first) and metric names.
  std::vector<std::string> axes = {"model"};
  std::set<std::string> names;
  std::map<std::string, size_t> status;
  std::set<std::string> machines;
  for (const RunRow& r : runs) {
    for (const auto& [k, v] : r.params.items())
      if (std::find(axes.begin(), axes.end(), k) == axes.end()) axes.push_back(k);
    for (const auto& [k, v] : r.metrics) names.insert(k);
    ++status[r.status];
    machines.insert(fmt::format("{} ({}), joule {}, host {}", r.cpu, r.isa, r.joule_version, r.host));
  }
  const std::string lat = pick(names, {"bench.latency_ms", "profile.latency_ms", "predict.latency_ms"}, ".latency_ms");
  const std::string acc = pick(names, {"eval.top1"}, ".top1");
  const std::string energy = pick(names, {"profile.energy_mj"}, ".energy_mj");

  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><link rel=\"icon\" href=\"data:,\"><title>" + xml_escape(title) +
                  "</title>\n<style>" + kStyle + "</style></head><body>\n";
  h += "<h1>" + xml_escape(title) + "</h1>\n<p class=\"note\">";
  h += fmt::format("{} runs:", runs.size());
  for (const auto& [s, n] : status) h += fmt::format(" {} {}", n, xml_escape(s));
  h += fmt::format(". Generated {} from {}.", now_iso8601(),
                   xml_escape(o.run_dirs.empty() ? o.store : fmt::format("{} run folders", o.run_dirs.size())));
  for (const std::string& m : machines) h += "<br>" + xml_escape(m);
  h += "</p>\n";

  // The runs' table: parameters, status, headline metrics.
  std::vector<std::string> cols;
  for (const std::string& n : names)
    for (const char* suffix : {"latency_ms", "top1", "energy_mj", "weight_bytes", "output_sqnr_db", "reference_pct",
                               "nodes_quantized", "fp32_top1"})
      if (ends_with(n, suffix)) {
        cols.push_back(n);
        break;
      }
  h += "<h2>Runs</h2>\n<table class=\"sortable\"><thead><tr>";
  for (const std::string& a : axes) h += "<th>" + xml_escape(a) + "</th>";
  h += "<th>status</th>";
  for (const std::string& c : cols) h += "<th>" + xml_escape(c) + "</th>";
  h += "<th>wall s</th></tr></thead><tbody>\n";
  for (const RunRow& r : runs) {
    h += "<tr>";
    for (const std::string& a : axes)
      h += "<td>" + xml_escape(r.params.contains(a) ? param(r, a) : a == "model" ? r.model : "") +
           "</td>";
    h += "<td class=\"" + xml_escape(r.status) + "\">" + xml_escape(r.status) + "</td>";
    for (const std::string& c : cols) {
      const double v = metric(r, c);
      h += std::isfinite(v) ? fmt::format("<td class=\"num\" data-v=\"{}\">{}</td>", v, xml_escape(fmt_metric(c, v)))
                            : "<td></td>";
    }
    h += fmt::format("<td class=\"num\">{:.1f}</td></tr>\n", r.wall_s);
  }
  h += "</tbody></table>\n";

  // Accuracy against latency and energy, with the Pareto front: the runs' own numbers, and the
  // rows of compare steps (one point per configuration compared).
  auto tradeoff = [&](const std::string& cost, const std::string& cost_label) {
    std::map<std::string, plot::Series> by_model;
    for (const RunRow& r : runs) {
      auto add = [&](double x, double y, const std::string& tip) {
        if (!std::isfinite(x) || !std::isfinite(y)) return;
        plot::Series& s = by_model[r.model];
        s.name = r.model;
        s.x.push_back(x);
        s.y.push_back(100 * y);
        s.tips.push_back(tip);
      };
      if (!cost.empty() && !acc.empty()) add(metric(r, cost), metric(r, acc), label_of(r, axes));
      const std::string suffix = cost_label == "latency" ? "latency_ms" : "energy_mj";
      for (const auto& [k, v] : r.metrics)
        if (k.rfind("compare.", 0) == 0 && ends_with(k, "." + suffix)) {
          const std::string row = k.substr(8, k.size() - 8 - suffix.size() - 1);
          add(v, metric(r, "compare." + row + ".top1"), label_of(r, axes) + " / " + row);
        }
    }
    size_t n = 0;
    plot::XYChart c;
    for (auto& [m, s] : by_model) {
      n += s.x.size();
      c.series.push_back(std::move(s));
    }
    if (n < 2) return std::string();
    c.title = "Top-1 accuracy against " + cost_label + " (dashed: Pareto front)";
    c.x_label = cost_label == "latency" ? "latency ms (median)" : "energy mJ per inference";
    c.y_label = "top-1 %";
    c.lines = false;
    c.pareto = true;
    return plot::xy(c);
  };
  std::string charts = tradeoff(lat, "latency") + tradeoff(energy, "energy");
  if (!charts.empty()) h += "<h2>Accuracy, latency, energy</h2>\n<div class=\"charts\">" + charts + "</div>\n";

  // Sweep curves: the latency over each numeric axis, one line per setting of the others.
  charts.clear();
  for (const std::string& a : axes) {
    if (a == "model" || a == "command_line" || lat.empty()) continue;
    std::set<double> values;
    bool numeric = true;
    for (const RunRow& r : runs) {
      double v = 0;
      if (!r.params.contains(a)) continue;
      numeric = numeric && is_number(param(r, a), &v);
      values.insert(v);
    }
    if (!numeric || values.size() < 2) continue;
    // One line per setting of the other axes; one chart per model when that makes too many.
    std::map<std::string, std::map<std::string, plot::Series>> by_model;
    size_t total = 0;
    for (const RunRow& r : runs) {
      double x = 0;
      if (!r.params.contains(a) || !is_number(param(r, a), &x)) continue;
      const std::string key = label_of(r, axes, a);
      plot::Series& s = by_model[r.model][key];
      total += s.x.empty();
      s.name = key;
      s.x.push_back(x);
      s.y.push_back(metric(r, lat));
    }
    const bool split = total > 8 && by_model.size() > 1;
    std::map<std::string, std::vector<plot::Series>> charts_of;
    for (auto& [model, lines] : by_model)
      for (auto& [k, s] : lines) charts_of[split ? model : ""].push_back(std::move(s));
    for (auto& [model, series] : charts_of) {
      plot::XYChart c;
      c.title = lat + " against " + a + (model.empty() ? "" : ": " + model);
      c.x_label = a;
      c.y_label = lat;
      c.series = std::move(series);
      charts += plot::xy(c);
    }
  }
  // The latency by model and the first non-numeric axis (the others at their first value).
  for (const std::string& a : axes) {
    if (a == "model" || a == "command_line" || lat.empty()) continue;
    std::vector<std::string> labels;
    bool numeric = true;
    for (const RunRow& r : runs) {
      if (!r.params.contains(a)) continue;
      const std::string l = param(r, a);
      double v = 0;
      numeric = numeric && is_number(l, &v);
      if (std::find(labels.begin(), labels.end(), l) == labels.end()) labels.push_back(l);
    }
    if (numeric || labels.size() < 2) continue;
    std::map<std::string, std::string> first;  // other axis -> its first label
    for (const RunRow& r : runs)
      for (const std::string& b : axes)
        if (b != "model" && b != a && r.params.contains(b) && !first.count(b)) first[b] = param(r, b);
    plot::BarChart c;
    std::string fixed;
    for (const auto& [b, l] : first) fixed += (fixed.empty() ? "" : ", ") + b + "=" + l;
    c.title = lat + " by model and " + a + (fixed.empty() ? "" : " (" + fixed + ")");
    c.value_label = lat;
    for (const RunRow& r : runs)
      if (std::find(c.categories.begin(), c.categories.end(), r.model) == c.categories.end())
        c.categories.push_back(r.model);
    for (const std::string& l : labels) c.series.push_back({l, {}, std::vector<double>(c.categories.size(), plot::kMissing), {}, {}});
    for (const RunRow& r : runs) {
      if (!r.params.contains(a)) continue;
      bool others = true;
      for (const auto& [b, l] : first) others = others && (!r.params.contains(b) || param(r, b) == l);
      if (!others) continue;
      const size_t ci = std::find(c.categories.begin(), c.categories.end(), r.model) - c.categories.begin();
      const size_t si = std::find(labels.begin(), labels.end(), param(r, a)) - labels.begin();
      c.series[si].y[ci] = metric(r, lat);
    }
    charts += plot::bars(c);
    break;
  }
  if (!charts.empty()) h += "<h2>Sweeps</h2>\n<div class=\"charts\">" + charts + "</div>\n";

  // Per-layer time and op-type shares of profiled runs.
  size_t shown = 0;
  std::string layers;
  for (const RunRow& r : runs) {
    if (r.layers.empty() || shown >= o.layer_runs) continue;
    ++shown;
    std::vector<const experiment::LayerRow*> top;
    for (const auto& l : r.layers) top.push_back(&l);
    std::sort(top.begin(), top.end(), [](auto* a, auto* b) { return a->ms > b->ms; });
    if (top.size() > 15) top.resize(15);
    plot::BarChart c;
    c.horizontal = true;
    c.max_label = 72;
    c.title = label_of(r, axes) + ": the 15 slowest layers";
    c.value_label = "ms per call (median)";
    plot::Series s{"", {}, {}, {}, {}};
    for (auto* l : top) {
      c.categories.push_back(l->name + " (" + l->op + ", " + l->algorithm + ")");
      s.y.push_back(l->ms);
      s.tips.push_back(fmt::format("{:.4g} ms, {:.1f}%", l->ms, l->pct));
    }
    c.series.push_back(std::move(s));
    std::map<std::string, double> by_op;
    for (const auto& l : r.layers) by_op[l.op] += l.pct;
    std::vector<std::pair<std::string, double>> ops(by_op.begin(), by_op.end());
    std::sort(ops.begin(), ops.end(), [](auto& a, auto& b) { return a.second > b.second; });
    plot::BarChart t;
    t.horizontal = true;
    t.title = label_of(r, axes) + ": share of layer time by op type";
    t.value_label = "% of the layers' time";
    plot::Series ts{"", {}, {}, {}, {}};
    for (auto& [op, pct] : ops) {
      t.categories.push_back(op);
      ts.y.push_back(pct);
    }
    t.series.push_back(std::move(ts));
    layers += "<div class=\"charts\">" + plot::bars(c) + plot::bars(t) + "</div>\n";
  }
  if (!layers.empty()) {
    size_t with_layers = 0;
    for (const RunRow& r : runs) with_layers += !r.layers.empty();
    h += "<h2>Per-layer time</h2>\n";
    if (with_layers > shown)
      h += fmt::format("<p class=\"note\">the first {} of {} profiled runs</p>\n", shown, with_layers);
    h += layers;
  }

  // The model's graph coloured by each node's time (the first profiled run of each model).
  std::string graphs;
  std::set<std::string> drawn;
  for (const RunRow& r : runs) {
    if (r.layers.empty() || drawn.count(r.model) || drawn.size() >= 4) continue;
    drawn.insert(r.model);
    graphs += cost_graph(r, label_of(r, axes));
  }
  if (!graphs.empty())
    h += "<h2>Graph coloured by per-layer time</h2>\n<p class=\"note\">each model's graph as loaded; a node's colour is "
         "its share of the slowest layer's time in the profiled run named (grey: no time of its own, fused into a "
         "neighbour or folded away); hover for the numbers</p>\n" + graphs;

  // Quantization sensitivity per layer.
  std::string sens;
  for (const RunRow& r : runs)
    for (const auto& [step, res] : r.result.items())
      if (step.rfind("sensitivity", 0) == 0 && res.is_object() && res.contains("layers"))
        sens += plot::bars(quant::sensitivity_chart(res, label_of(r, axes) + ", " + res.value("mode", "")));
  if (!sens.empty()) h += "<h2>Quantization sensitivity</h2>\n<div class=\"charts\">" + sens + "</div>\n";

  // Each run in full.
  h += "<h2>Run details</h2>\n";
  for (const RunRow& r : runs) {
    h += "<details><summary>" + xml_escape(r.point) + " — <span class=\"" + xml_escape(r.status) + "\">" +
         xml_escape(r.status) + "</span></summary>\n";
    if (!r.error.empty()) h += "<p class=\"failed\">" + xml_escape(r.error) + "</p>\n";
    h += fmt::format("<p class=\"note\">steps {}; started {}, {:.1f} s; {}</p>\n", xml_escape(r.command),
                     xml_escape(r.started), r.wall_s, xml_escape(r.run_dir));
    if (!r.metrics.empty()) {
      h += "<table><tbody>";
      for (const auto& [k, v] : r.metrics)
        h += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td></tr>", xml_escape(k), xml_escape(fmt_metric(k, v)));
      h += "</tbody></table>\n";
    }
    h += "<pre>" + xml_escape(r.result.dump(1).substr(0, 20000)) + "</pre></details>\n";
  }
  h += std::string("<script>") + kScript + "</script>\n</body></html>\n";
  return h;
}

}  // namespace joule::report
