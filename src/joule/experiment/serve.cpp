#include "joule/experiment/serve.h"

#include <httplib.h>

#include <chrono>
#include <thread>

#include "joule/core/error.h"
#include "joule/experiment/store.h"
#include "joule/report/report.h"

namespace joule::experiment {

nlohmann::json api_experiments(const std::string& store) {
  ResultsStore st(store);
  nlohmann::json a = nlohmann::json::array();
  for (const ExperimentRow& e : st.experiments()) a.push_back(e.to_json());
  // Runs recorded by commands (--store), outside any experiment.
  RunFilter f;
  f.any_experiment = false;
  const size_t commands = st.count(f);
  return {{"store", st.path()}, {"experiments", a}, {"command_runs", commands}};
}

nlohmann::json api_runs(const std::string& store, const std::string& experiment, const std::string& status,
                        const std::string& model) {
  ResultsStore st(store);
  RunFilter f;
  f.experiment = experiment;
  f.status = status;
  f.model = model;
  nlohmann::json a = nlohmann::json::array();
  for (const RunRow& r : st.runs(f)) {
    nlohmann::json j = r.to_json();
    j.erase("result");  // /api/runs/ID has it
    j.erase("layers");
    a.push_back(std::move(j));
  }
  return a;
}

nlohmann::json api_run(const std::string& store, int64_t id) {
  ResultsStore st(store);
  const auto r = st.run(id, true);
  return r ? r->to_json() : nlohmann::json();
}

const std::string& dashboard_html() {
  static const std::string page = R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>joule dashboard</title><link rel="icon" href="data:,">
<style>
body{font-family:sans-serif;margin:0;color:#222}
header{background:#23395d;color:#fff;padding:10px 20px}header h1{font-size:18px;margin:0;display:inline}
header span{font-size:12px;margin-left:14px;opacity:.85}
main{padding:12px 20px;max-width:1500px}
h2{font-size:16px;margin:18px 0 6px}
table{border-collapse:collapse;font-size:12px}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.run{cursor:pointer}tr.run:hover{background:#eef4ff}tr.sel{background:#dde9ff}
.failed{color:#b00}.running{color:#a60}.done{color:#282}
.bar{background:#e6e6e6;width:160px;height:10px;display:inline-block;position:relative}
.bar i{position:absolute;top:0;bottom:0;left:0}
.filters{margin:6px 0;font-size:13px}.filters *{margin-right:8px}
.panes{display:flex;gap:24px;flex-wrap:wrap;align-items:flex-start}
.lbar{background:#3b6ea8;height:9px;display:inline-block}
.note{color:#666;font-size:12px}
button{font-size:12px}
</style></head><body>
<header><h1>joule</h1><span id="store"></span><span id="updated"></span></header>
<main>
<h2>Experiments</h2>
<table id="experiments"><thead><tr><th>experiment</th><th>points</th><th>progress</th><th>done</th><th>failed</th>
<th>running</th><th>updated</th><th>report</th></tr></thead><tbody></tbody></table>
<p class="note" id="commands"></p>
<h2>Runs</h2>
<div class="filters">experiment <select id="f-exp"><option value="">all</option></select>
status <select id="f-status"><option value="">any</option><option>done</option><option>failed</option>
<option>running</option></select>
model <input id="f-model" size="14" placeholder="any">
<label><input type="checkbox" id="live" checked> live</label>
<button id="compare" disabled>compare the two selected</button>
<span class="note">click a run for its details; ctrl-click (or the boxes) to select two</span></div>
<table id="runs"><thead><tr><th></th><th>id</th><th>experiment</th><th>point</th><th>status</th><th>latency ms</th>
<th>top-1</th><th>wall s</th><th>finished</th></tr></thead><tbody></tbody></table>
<div id="detail"></div>
</main>
<script>
"use strict";
var selected = [];
function el(tag, attrs, text) {
  var e = document.createElement(tag);
  if (attrs) Object.keys(attrs).forEach(function(k) { e.setAttribute(k, attrs[k]); });
  if (text !== undefined) e.textContent = text;
  return e;
}
function num(v, digits) { return (v === undefined || v === null) ? "" : Number(v).toPrecision(digits || 4); }
function latency(m) {
  var keys = ["bench.latency_ms", "profile.latency_ms", "predict.latency_ms"];
  for (var i = 0; i < keys.length; i++) if (m[keys[i]] !== undefined) return m[keys[i]];
  for (var k in m) if (/\.latency_ms$/.test(k)) return m[k];
  return undefined;
}
function top1(m) {
  if (m["eval.top1"] !== undefined) return m["eval.top1"];
  for (var k in m) if (/^[^.]+\.top1$/.test(k)) return m[k];
  return undefined;
}
function getJSON(url) {
  return fetch(url).then(function(r) { if (!r.ok) throw new Error(url + ": " + r.status); return r.json(); });
}
function loadExperiments() {
  return getJSON("/api/experiments").then(function(d) {
    document.getElementById("store").textContent = d.store;
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
    var body = document.querySelector("#experiments tbody");
    body.innerHTML = "";
    var sel = document.getElementById("f-exp"), have = {};
    Array.prototype.forEach.call(sel.options, function(o) { have[o.value] = true; });
    d.experiments.forEach(function(e) {
      var tr = el("tr");
      tr.appendChild(el("td", null, e.name));
      tr.appendChild(el("td", {"class": "num"}, e.points));
      var bar = el("span", {"class": "bar", title: e.done + " done, " + e.failed + " failed of " + e.points});
      var done = el("i"); done.style.width = (100 * e.done / Math.max(1, e.points)) + "%"; done.style.background = "#4b9b5a";
      var fail = el("i"); fail.style.left = done.style.width; fail.style.width = (100 * e.failed / Math.max(1, e.points)) + "%";
      fail.style.background = "#c8414b";
      bar.appendChild(done); bar.appendChild(fail);
      var td = el("td"); td.appendChild(bar); tr.appendChild(td);
      tr.appendChild(el("td", {"class": "num done"}, e.done));
      tr.appendChild(el("td", {"class": "num failed"}, e.failed));
      tr.appendChild(el("td", {"class": "num running"}, e.running));
      tr.appendChild(el("td", null, e.updated));
      var a = el("a", {href: "/report?experiment=" + encodeURIComponent(e.name), target: "_blank"}, "report");
      td = el("td"); td.appendChild(a); tr.appendChild(td);
      body.appendChild(tr);
      if (!have[e.name]) sel.appendChild(el("option", {value: e.name}, e.name));
    });
    document.getElementById("commands").textContent =
        d.command_runs ? d.command_runs + " runs recorded by commands (--store), outside experiments" : "";
  });
}
function loadRuns() {
  var q = "?experiment=" + encodeURIComponent(document.getElementById("f-exp").value) +
          "&status=" + encodeURIComponent(document.getElementById("f-status").value) +
          "&model=" + encodeURIComponent(document.getElementById("f-model").value.trim());
  return getJSON("/api/runs" + q).then(function(runs) {
    var body = document.querySelector("#runs tbody");
    body.innerHTML = "";
    runs.forEach(function(r) {
      var tr = el("tr", {"class": "run" + (selected.indexOf(r.id) >= 0 ? " sel" : ""), "data-id": r.id});
      var box = el("input", {type: "checkbox"});
      box.checked = selected.indexOf(r.id) >= 0;
      box.addEventListener("click", function(ev) { ev.stopPropagation(); toggle(r.id); });
      var td = el("td"); td.appendChild(box); tr.appendChild(td);
      tr.appendChild(el("td", {"class": "num"}, r.id));
      tr.appendChild(el("td", null, r.experiment || "(command)"));
      tr.appendChild(el("td", null, r.point));
      tr.appendChild(el("td", {"class": r.status}, r.status));
      tr.appendChild(el("td", {"class": "num"}, num(latency(r.metrics))));
      var t1 = top1(r.metrics);
      tr.appendChild(el("td", {"class": "num"}, t1 === undefined ? "" : (100 * t1).toFixed(2) + "%"));
      tr.appendChild(el("td", {"class": "num"}, Number(r.wall_s).toFixed(1)));
      tr.appendChild(el("td", null, r.finished));
      tr.addEventListener("click", function(ev) { if (ev.ctrlKey || ev.metaKey) toggle(r.id); else showRun(r.id); });
      body.appendChild(tr);
    });
  });
}
function toggle(id) {
  var i = selected.indexOf(id);
  if (i >= 0) selected.splice(i, 1); else { selected.push(id); if (selected.length > 2) selected.shift(); }
  document.getElementById("compare").disabled = selected.length !== 2;
  Array.prototype.forEach.call(document.querySelectorAll("#runs tr.run"), function(tr) {
    var on = selected.indexOf(Number(tr.getAttribute("data-id"))) >= 0;
    tr.className = "run" + (on ? " sel" : "");
    tr.querySelector("input").checked = on;
  });
}
function table(head, rows) {
  var t = el("table"), tr = el("tr");
  head.forEach(function(h) { tr.appendChild(el("th", null, h)); });
  var th = el("thead"); th.appendChild(tr); t.appendChild(th);
  var tb = el("tbody");
  rows.forEach(function(r) {
    var tr = el("tr");
    r.forEach(function(c) {
      if (c instanceof Node) { var td = el("td"); td.appendChild(c); tr.appendChild(td); }
      else tr.appendChild(el("td", typeof c === "number" ? {"class": "num"} : null, typeof c === "number" ? num(c) : c));
    });
    tb.appendChild(tr);
  });
  t.appendChild(tb);
  return t;
}
function lbar(pct) { var s = el("span", {"class": "lbar"}); s.style.width = Math.max(1, 1.6 * pct) + "px"; return s; }
function showRun(id) {
  getJSON("/api/runs/" + id).then(function(r) {
    var d = document.getElementById("detail");
    d.innerHTML = "";
    d.appendChild(el("h2", null, "Run " + r.id + ": " + r.point));
    d.appendChild(el("p", {"class": "note"}, r.command + " | " + r.status + " | " + r.cpu + " (" + r.isa + "), joule " +
        r.joule_version + ", host " + r.host + " | " + r.run_dir));
    if (r.error) d.appendChild(el("p", {"class": "failed"}, r.error));
    var panes = el("div", {"class": "panes"});
    var m = Object.keys(r.metrics).sort().map(function(k) { return [k, r.metrics[k]]; });
    var left = el("div"); left.appendChild(el("h2", null, "Metrics")); left.appendChild(table(["metric", "value"], m));
    panes.appendChild(left);
    if (r.layers.length) {
      var ls = r.layers.slice().sort(function(a, b) { return b.ms - a.ms; }).slice(0, 40);
      var right = el("div");
      right.appendChild(el("h2", null, "Per-layer time (the " + ls.length + " slowest of " + r.layers.length + ")"));
      right.appendChild(table(["layer", "op", "algorithm", "ms", "%", ""], ls.map(function(l) {
        return [l.name, l.op, l.algorithm, l.ms, Number(l.pct.toFixed(1)), lbar(l.pct)];
      })));
      panes.appendChild(right);
    }
    d.appendChild(panes);
    d.scrollIntoView();
  }).catch(showError);
}
function compareRuns() {
  Promise.all(selected.map(function(id) { return getJSON("/api/runs/" + id); })).then(function(rs) {
    var a = rs[0], b = rs[1], d = document.getElementById("detail");
    d.innerHTML = "";
    d.appendChild(el("h2", null, "Run " + a.id + " against run " + b.id));
    d.appendChild(el("p", {"class": "note"}, "A: " + a.point + "  |  B: " + b.point));
    var names = {};
    Object.keys(a.metrics).concat(Object.keys(b.metrics)).forEach(function(k) { names[k] = true; });
    var rows = Object.keys(names).sort().map(function(k) {
      var x = a.metrics[k], y = b.metrics[k];
      return [k, x === undefined ? "" : x, y === undefined ? "" : y, (x && y !== undefined) ? num(y / x, 3) : ""];
    });
    var panes = el("div", {"class": "panes"});
    var left = el("div"); left.appendChild(el("h2", null, "Metrics")); left.appendChild(table(["metric", "A", "B", "B / A"], rows));
    panes.appendChild(left);
    if (a.layers.length && b.layers.length) {
      var bl = {};
      b.layers.forEach(function(l) { bl[l.name] = l; });
      var joined = a.layers.filter(function(l) { return bl[l.name]; }).map(function(l) {
        return {name: l.name, op: l.op, a: l, b: bl[l.name], diff: bl[l.name].ms - l.ms};
      }).sort(function(x, y) { return Math.abs(y.diff) - Math.abs(x.diff); }).slice(0, 40);
      var right = el("div");
      right.appendChild(el("h2", null, "Per-layer differences (" + joined.length + " layers in both, largest first)"));
      right.appendChild(table(["layer", "op", "A algorithm", "B algorithm", "A ms", "B ms", "B - A ms", "B / A"],
          joined.map(function(j) {
            return [j.name, j.op, j.a.algorithm, j.b.algorithm, j.a.ms, j.b.ms, j.diff, j.a.ms > 0 ? j.b.ms / j.a.ms : ""];
          })));
      panes.appendChild(right);
    }
    d.appendChild(panes);
    d.scrollIntoView();
  }).catch(showError);
}
function showError(e) {
  var d = document.getElementById("detail");
  d.innerHTML = "";
  d.appendChild(el("p", {"class": "failed"}, String(e)));
}
function refresh() { return Promise.all([loadExperiments(), loadRuns()]).catch(showError); }
document.getElementById("f-exp").addEventListener("change", loadRuns);
document.getElementById("f-status").addEventListener("change", loadRuns);
document.getElementById("f-model").addEventListener("input", loadRuns);
document.getElementById("compare").addEventListener("click", compareRuns);
setInterval(function() { if (document.getElementById("live").checked) refresh(); }, 2000);
refresh();
</script></body></html>
)html";
  return page;
}

void serve(const ServeOptions& o, const api::Hooks& hooks, const std::function<void(int)>& ready) {
  { ResultsStore check(o.store); }  // a bad store: the error now, not per request
  httplib::Server srv;
  auto json = [](httplib::Response& res, const nlohmann::json& j, int status = 200) {
    res.status = status;
    res.set_content(j.dump(), "application/json");
  };
  // Every route answers a store error as JSON with the message (the page shows it).
  auto guarded = [json](std::function<void(const httplib::Request&, httplib::Response&)> f) {
    return [f, json](const httplib::Request& req, httplib::Response& res) {
      try {
        f(req, res);
      } catch (const std::exception& e) {
        json(res, {{"error", e.what()}}, 500);
      }
    };
  };
  const std::string store = o.store;
  srv.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(dashboard_html(), "text/html; charset=utf-8");
  });
  srv.Get("/api/experiments", guarded([store, json](const httplib::Request&, httplib::Response& res) {
            json(res, api_experiments(store));
          }));
  srv.Get("/api/runs", guarded([store, json](const httplib::Request& req, httplib::Response& res) {
            json(res, api_runs(store, req.get_param_value("experiment"), req.get_param_value("status"),
                               req.get_param_value("model")));
          }));
  srv.Get(R"(/api/runs/(\d+))", guarded([store, json](const httplib::Request& req, httplib::Response& res) {
            const nlohmann::json r = api_run(store, std::stoll(req.matches[1]));
            if (r.is_null())
              json(res, {{"error", "no run " + std::string(req.matches[1])}}, 404);
            else
              json(res, r);
          }));
  srv.Get("/report", guarded([store](const httplib::Request& req, httplib::Response& res) {
            report::ReportOptions ro;
            ro.store = store;
            ro.experiment = req.get_param_value("experiment");
            res.set_content(report::report_html(ro), "text/html; charset=utf-8");
          }));
  const int port = o.port == 0 ? srv.bind_to_any_port(o.host) : (srv.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port <= 0) fail("serve: cannot listen on " + o.host + ":" + std::to_string(o.port) + " (in use, or not an address here)");
  std::thread listener([&srv] { srv.listen_after_bind(); });
  if (ready) ready(port);
  try {
    while (true) {
      hooks.check();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  } catch (...) {
    srv.stop();
    listener.join();
    throw;
  }
}

}  // namespace joule::experiment
