#include "joule/api/compare.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "joule/api/evaluate.h"
#include "joule/api/prepare.h"
#include "joule/api/run.h"
#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/passes/pass.h"
#include "joule/quant/sensitivity.h"

namespace joule::api {

namespace {

// Layers of a profile that ran on integer kernels (what int8 "real" buys; the emulated kernels
// of int8 "simulated" compute in float32).
size_t integer_nodes(const profile::ProfileResult& pr) {
  size_t n = 0;
  for (const profile::LayerResult& l : pr.layers)
    for (const char* op : {"QConv", "QMatMul", "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger"})
      n += l.op == op && l.algorithm != "emulated";
  return n;
}

// The FP32 model at --precision bf16: the ladder checked on `probe`, then timed like the other rows
// (the profile with the same algorithm rules) and evaluated on the session the ladder made.
CompareRow bf16_row(const ir::Graph& fp32, double fp32_weight_bytes, const CompareOptions& o,
                    profile::ProfileOptions po, const runtime::TensorMap& probe, const data::Dataset* eval_set,
                    const Hooks& hooks) {
  CompareRow r;
  r.name = "bf16";
  r.config = "--precision bf16";
  PrepareOptions p = PrepareOptions::with_threads(o.quant.threads);
  p.precision = "bf16";
  p.bf16_min_sqnr_db = o.bf16_min_sqnr_db;
  p.check_inputs = probe;
  Prepared b = prepare(ir::Graph(fp32), p);
  Prepared f = prepare(ir::Graph(fp32), PrepareOptions::with_threads(o.quant.threads));
  const runtime::TensorMap want = f.session->run(probe), got = b.session->run(probe);
  quant::MetricsAccumulator acc;
  for (auto& [name, t] : want)
    if (t.dtype() == DType::Float32) acc.add(t, got.at(name));
  r.output_sqnr_db = acc.result().sqnr_db;
  // The bf16 kernels hold their weights in bfloat16: half the bytes of those layers' weights (as
  // the passes left them: folded BatchNorms make new ones).
  r.weight_bytes = fp32_weight_bytes;
  const ir::Graph& planned = b.session->graph();
  for (size_t i = 0; i < b.session->num_steps(); ++i) {
    const ir::Node& n = b.session->step_node(i);
    if (!on_bf16_kernel(n) || n.inputs.size() < 2) continue;
    if (auto w = planned.initializers.find(n.inputs[1]); w != planned.initializers.end())
      r.weight_bytes -= 2.0 * static_cast<double>(w->second.numel());
  }
  precision_algorithms("bf16", po.algo);
  keep_fp32(b.precision, po.algo);
  hooks.report("compare", 0, 0, "compare: timing bf16");
  po.model_name = r.name;
  profile::ProfileResult pr = profile::profile_model(fp32, po, &probe);
  r.latency_ms = pr.plain_ms;
  r.energy = pr.energy;
  if (eval_set) r.eval = evaluate_session(*b.session, *eval_set, o.quant.eval_samples, hooks, "evaluating bf16");
  r.precision = std::move(b.precision);
  return r;
}

}  // namespace

nlohmann::json CompareRow::to_json() const {
  nlohmann::json j{{"model", name},
                   {"latency_ms", profile::to_json(latency_ms)},
                   {"weight_bytes", weight_bytes},
                   {"integer_nodes", integer_nodes},
                   {"fake_quant_nodes", fake_quant_nodes}};
  if (!config.empty()) j["config"] = config;
  if (precision) j["precision"] = precision->to_json();
  if (output_sqnr_db) j["output_sqnr_db"] = std::isfinite(*output_sqnr_db) ? nlohmann::json(*output_sqnr_db) : nlohmann::json();
  if (eval) j["eval"] = eval->to_json();
  if (energy)
    j["energy"] = {{"source", energy->source},
                   {"joules_per_inference", energy->joules_per_inference},
                   {"dynamic_joules_per_inference", energy->dynamic_joules_per_inference},
                   {"note", energy->note}};
  return j;
}

nlohmann::json CompareReport::to_json() const {
  nlohmann::json j = settings;
  j["model"] = model;
  if (!data.empty()) j["data"] = data;
  for (const CompareRow& r : rows) j["rows"].push_back(r.to_json());
  return j;
}

std::string CompareReport::csv() const {
  std::string csv = profile::csv_line({"model", "config", "top1", "top5", "samples", "latency_median_ms",
                                       "latency_p90_ms", "energy_j_per_inference", "energy_source", "weight_bytes",
                                       "integer_nodes"});
  for (const CompareRow& r : rows)
    csv += profile::csv_line(
        {r.name, r.config, r.eval ? fmt::format("{:.6f}", r.eval->top1_rate()) : "",
         r.eval && r.eval->classes >= 5 ? fmt::format("{:.6f}", r.eval->top5_rate()) : "",
         r.eval ? std::to_string(r.eval->samples) : "", fmt::format("{:.4f}", r.latency_ms.median),
         fmt::format("{:.4f}", r.latency_ms.p90), r.energy ? fmt::format("{:.6g}", r.energy->joules_per_inference) : "",
         r.energy ? r.energy->source : "", fmt::format("{:.0f}", r.weight_bytes), std::to_string(r.integer_nodes)});
  return csv;
}

CompareReport compare(const Model& m, const CompareOptions& o, const Hooks& hooks) {
  const QuantOptions& q = o.quant;
  check_int8_mode(q.int8);
  if (q.calib.empty()) fail("compare: calibration data is required (for the configs)");
  if (o.configs.empty()) fail("compare: no quantization config to compare with FP32");
  for (const std::string& c : o.configs) read_config(c);  // every file there before anything runs
  QuantModel base = plan_model(m, q, o.configs.front());
  std::unique_ptr<data::Dataset> eval_set;
  if (!q.eval.empty()) eval_set = open_data(q.eval, base.model, q.preprocess);
  std::unique_ptr<data::Dataset> calib_set = open_data(q.calib, base.model, q.preprocess);
  const runtime::TensorMap probe =
      load_samples(eval_set ? *eval_set : *calib_set, base.graph.inputs[0], 1, false).inputs.at(0);

  std::vector<std::string> pipeline = passes::default_pipeline();
  profile::ProfileOptions po;
  apply_int8_mode(q.int8, pipeline, po.algo);
  po.threads = q.threads;
  po.runs = o.runs;
  po.warmup = o.warmup;
  po.energy = o.energy;
  po.meter.estimate_profile = o.energy_profile;
  po.layer_energy = false;
  po.passes = pipeline;
  po.checkpoint = [&hooks] { hooks.check(); };

  auto measure = [&](CompareRow& r, const ir::Graph& g) {
    hooks.report("compare", 0, 0, "compare: timing " + r.name);
    po.model_name = r.name;
    profile::ProfileResult pr = profile::profile_model(g, po, &probe);
    r.latency_ms = pr.plain_ms;
    r.energy = pr.energy;
    if (eval_set) r.eval = evaluate_graph(g, *eval_set, q, hooks, r.name);
    r.integer_nodes = integer_nodes(pr);
    r.fake_quant_nodes = joule_op_nodes(g).size();
  };
  CompareReport rep;
  rep.model = model_label(base.model);
  rep.rows.resize(1);
  rep.rows[0].name = "fp32";
  rep.rows[0].weight_bytes = quant::weight_bytes(base.graph, quant::QuantPlan{});
  measure(rep.rows[0], base.graph);
  if (o.bf16) rep.rows.push_back(bf16_row(base.graph, rep.rows[0].weight_bytes, o, po, probe, eval_set.get(), hooks));
  for (const std::string& config : o.configs) {
    QuantModel c = replan(base, config);
    calibrate(c, q, hooks);
    CompareRow r;
    const ConfigText text = read_config(config);
    r.name = text.label == "inline config" ? fmt::format("config{}", rep.rows.size())
                                           : std::filesystem::path(config).stem().string();
    r.config = text.label;
    r.weight_bytes = quant::weight_bytes(c.graph, c.plan);
    measure(r, quant::insert_qdq(c.graph, c.plan));
    rep.rows.push_back(std::move(r));
  }
  rep.settings = {{"threads", q.threads},      {"int8", q.int8},
                  {"int8_note", int8_note(q.int8)}, {"calibration", q.calib.spec.empty() ? q.calib.label() : q.calib.spec},
                  {"calibration_samples", q.calib_samples}, {"runs", o.runs}};
  if (eval_set) rep.data = eval_set->describe();
  if (!o.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.out_dir, ec);
    if (ec) fail(o.out_dir + ": cannot create directory: " + ec.message());
    write_file_atomic(o.out_dir + "/compare.json", rep.to_json().dump(2) + "\n");
    write_file_atomic(o.out_dir + "/compare.csv", rep.csv());
  }
  return rep;
}

}  // namespace joule::api
