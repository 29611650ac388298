#include "joule/api/quantize.h"

#include <fmt/format.h>

#include <filesystem>

#include "joule/api/evaluate.h"
#include "joule/api/prepare.h"
#include "joule/api/run.h"
#include "joule/core/cpu_features.h"
#include "joule/core/error.h"
#include "joule/core/file_util.h"

namespace joule::api {

ConfigText read_config(const std::string& config) {
  if (config.empty()) fail("quantization config: none given (a YAML file or YAML text)");
  if (config.front() == '{' || config.find('\n') != std::string::npos) return {config, "inline config"};
  return {read_file(config), config};
}

QuantModel plan_model(const Model& m, const QuantOptions& o, const std::string& config) {
  QuantModel q{m.with_input_shapes(o.input_shapes), {}, {}};
  q.graph = q.model.graph();
  quant::prepare_for_quantization(q.graph);
  return replan(q, config);
}

QuantModel replan(const QuantModel& q, const std::string& config) {
  const ConfigText c = read_config(config);
  QuantModel r{q.model, q.graph, {}};
  r.plan = quant::plan_quantization(r.graph, quant::resolve(r.graph, quant::QuantConfig::parse(c.yaml, c.label)));
  if (r.plan.choices.empty()) fail(c.label + ": no node of the model is selected for quantization");
  return r;
}

size_t calibrate(QuantModel& q, const QuantOptions& o, const Hooks& hooks, std::string* how) {
  bool needs = false;
  for (auto& pt : q.plan.points) needs |= !pt.constant && pt.spec.format.needs_calibration();
  std::unique_ptr<data::Dataset> d;
  quant::SampleFn next = [](runtime::TensorMap&) { return false; };
  std::string label = "none";
  if (!o.calib.empty()) {
    std::string described;
    d = open_data(o.calib, q.model, o.preprocess, &described);
    next = sample_stream(*d, q.graph.inputs[0], o.calib_samples);
    label = fmt::format("{}|{}|{}", o.calib.label(), o.calib_samples, described);
    if (how) *how = described;
  } else if (needs) {
    fail("calibration data is required: the config has formats whose activation ranges must be calibrated");
  }
  quant::CalibrationOptions c;
  c.threads = o.threads;
  c.cache_path = o.calib_cache;
  c.data_label = label;
  c.progress = [&](size_t n) { hooks.report("calibrating", n, o.calib_samples, fmt::format("calibrating: {} samples", n)); };
  return quant::calibrate(q.graph, q.plan, next, c);
}

std::unique_ptr<runtime::Session> fast_session(const ir::Graph& g, int threads, const std::string& int8) {
  PrepareOptions p;
  p.threads = threads;
  p.int8 = int8;
  return prepare(ir::Graph(g), p).session;
}

data::EvalResult evaluate_graph(const ir::Graph& g, const data::Dataset& d, const QuantOptions& o, const Hooks& hooks,
                                const std::string& what) {
  return evaluate_session(*fast_session(g, o.threads, o.int8), d, o.eval_samples, hooks, "evaluating " + what);
}

// Without VNNI oneDNN's and joule's integer kernels are exact only for weights of at most 7 bits
// (kernels/int8/int8_node.h): "" or a note that the plan's 8-bit weights will run emulated here.
static std::string int8_speed_note(const quant::QuantPlan& plan) {
  if (int8_inexact_reason().empty()) return "";
  size_t eight = 0;
  for (const quant::QuantPoint& p : plan.points)
    eight += p.constant && !p.spec.derived_bias && p.spec.format.kind == quant::FormatKind::Int &&
             p.spec.format.bits == 8;
  if (!eight) return "";
  return fmt::format("{} weight tensors have 8-bit codes: on this CPU ({}, no VNNI) --int8 real runs them on the exact "
                     "emulated kernels, slower than FP32; weights of 7 bits (weight: {{bits: 7}}, as in "
                     "examples/quant/w7a8.yaml) run on integer kernels here",
                     eight, cpu_features().model);
}

QuantPlanReport quant_plan(const Model& m, const QuantOptions& o) {
  const QuantModel q = plan_model(m, o, o.config);
  return {quant::plan_json(q.graph, q.plan), quant::describe_plan(q.graph, q.plan)};
}

QuantizeResult quantize(const Model& m, const QuantOptions& o, const Hooks& hooks) {
  check_int8_mode(o.int8);
  QuantModel q = plan_model(m, o, o.config);
  std::unique_ptr<data::Dataset> eval_set;
  if (!o.eval.empty()) eval_set = open_data(o.eval, q.model, o.preprocess);  // fail early on bad data
  std::string how;
  const size_t calibrated = calibrate(q, o, hooks, &how);
  const ConfigText config = read_config(o.config);
  const std::string stem = config.label == "inline config" ? "quant" : std::filesystem::path(o.config).stem().string();
  QuantizeResult r{q.model.derived(quant::insert_qdq(q.graph, q.plan), q.model.name() + "_" + stem), {}, {}};
  r.plan_table = quant::describe_plan(q.graph, q.plan);
  r.report = {{"model", model_label(q.model)},
              {"config", config.label},
              {"nodes_quantized", q.plan.choices.size()},
              {"tensors_quantized", q.plan.points.size()},
              {"calibration_samples", calibrated},
              {"preprocessing", how},
              {"fake_quant_nodes", r.model.joule_op_nodes().size()},
              {"plan", quant::plan_json(q.graph, q.plan)}};
  if (std::string note = int8_speed_note(q.plan); !note.empty()) r.report["note"] = note;
  if (eval_set) {
    const data::EvalResult f = evaluate_graph(q.graph, *eval_set, o, hooks, "fp32");
    const data::EvalResult qr = evaluate_graph(r.model.graph(), *eval_set, o, hooks, "quantized");
    r.report["eval"] = {{"data", eval_set->describe()}, {"fp32", f.to_json()}, {"quantized", qr.to_json()},
                        {"top1_drop_points", 100 * (f.top1_rate() - qr.top1_rate())}};
  }
  return r;
}

SensitivityResult sensitivity(const Model& m, const SensitivityOptions& o, const Hooks& hooks) {
  quant::SensitivityOptions so;
  so.mode = quant::sensitivity_mode_from_name(o.mode);
  so.variants = o.variants;
  so.threads = o.quant.threads;
  so.progress = [&](const std::string& s) { hooks.report("sensitivity", 0, 0, s); };
  const QuantOptions& qo = o.quant;
  if (o.samples < 1) fail("sensitivity: samples must be at least 1");
  QuantModel q = plan_model(m, qo, qo.config);
  const DataSource& src = !qo.eval.empty() ? qo.eval : qo.calib;
  if (src.empty()) fail("sensitivity: give calibration data (and optionally labelled eval data)");
  std::unique_ptr<data::Dataset> d = open_data(src, q.model, qo.preprocess);
  const size_t calibrated = calibrate(q, qo, hooks);
  LoadedSamples s = load_samples(*d, q.graph.inputs[0], o.samples, !qo.eval.empty());
  if (qo.eval.empty()) s.labels.clear();  // accuracy only on the data given for it
  SensitivityResult r;
  r.report = quant::sensitivity(q.graph, q.plan, s.inputs, s.labels, so);
  r.json = r.report.to_json();
  r.json["model"] = model_label(q.model);
  r.json["config"] = read_config(qo.config).label;
  r.json["calibration_samples"] = calibrated;
  r.json["data"] = d->describe();
  if (!o.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.out_dir, ec);
    if (ec) fail(o.out_dir + ": cannot create directory: " + ec.message());
    write_file_atomic(o.out_dir + "/sensitivity.json", r.json.dump(2) + "\n");
    write_file_atomic(o.out_dir + "/sensitivity.csv", r.report.csv());
    write_file_atomic(o.out_dir + "/sensitivity.svg", r.report.svg(q.model.name() + ", " + o.mode));
  }
  return r;
}

}  // namespace joule::api
