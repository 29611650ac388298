// Shared by the quantization commands (see quant_flow.h).
#include "joule/cli/quant_flow.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "joule/cli/util.h"
#include "joule/core/error.h"

namespace joule::cli {

void add_common(CLI::App& app, QuantArgs& a, bool with_config) {
  app.add_option("model", a.model, "ONNX model file ('default' = the bundled Fashion-MNIST CNN)")->required();
  if (with_config)
    app.add_option("--config", a.config, "quantization config (YAML; see docs/quantization.md)")->required();
  app.add_option("--calib", a.calib, "calibration data SPEC (.npy, IDX, JPEG class folder or LMDB)");
  app.add_option("--calib-samples", a.calib_samples, "calibration samples (the first N of --calib)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--calib-cache", a.calib_cache, "JSON file of calibration ranges: read when present, then updated");
  app.add_option("--eval", a.eval, "labelled data SPEC for accuracy");
  app.add_option("--eval-samples", a.eval_samples, "evaluate the first N samples of --eval (default all)");
  app.add_option("--input-shape", a.input_shapes, "NAME=1,3,224,224 (or one shape for a one-input model)");
  app.add_option("--threads", a.threads, "intra-op threads")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--format", a.format, "table or json")->check(CLI::IsMember({"table", "json"}));
  app.add_flag("--quiet", a.quiet, "no progress on stderr");
  add_int8_option(app, a.int8);
  add_data_options(app, a.data);
}



Prepared prepare(const QuantArgs& a, const std::string& config) {
  Prepared p;
  p.path = resolve_model_path(a.model);
  p.graph = load_model_or_default(p.path);
  apply_input_shapes(p.graph, a.input_shapes);
  quant::prepare_for_quantization(p.graph);
  p.plan = plan_for(p, config.empty() ? a.config : config);
  return p;
}

quant::QuantPlan plan_for(const Prepared& p, const std::string& config) {
  quant::QuantPlan plan = quant::plan_quantization(p.graph, quant::resolve(p.graph, quant::QuantConfig::load(config)));
  if (plan.choices.empty()) fail(config + ": no node of the model is selected for quantization");
  return plan;
}

void progress_line(bool quiet, const std::string& s) {
  if (!quiet && isatty(2)) fmt::print(stderr, "\r{:<70}", s);
}
void progress_end(bool quiet) {
  if (!quiet && isatty(2)) fmt::print(stderr, "\r{:<70}\r", "");
}

// Calibrates the plan on the first --calib-samples of --calib.
size_t run_calibration(const QuantArgs& a, Prepared& p, std::string* how) {
  bool needs = false;
  for (auto& pt : p.plan.points) needs |= !pt.constant && pt.spec.format.needs_calibration();
  std::unique_ptr<data::Dataset> d;
  quant::SampleFn next = [](runtime::TensorMap&) { return false; };
  std::string label = "none";
  if (!a.calib.empty()) {
    d = open_data(a.calib, p.graph, p.path, a.data, how);
    next = sample_stream(*d, p.graph.inputs[0], a.calib_samples);
    label = fmt::format("{}|{}|{}", std::filesystem::absolute(a.calib).string(), a.calib_samples, how ? *how : "");
  } else if (needs) {
    fail("--calib is required: the config has formats whose activation ranges must be calibrated");
  }
  quant::CalibrationOptions o;
  o.threads = a.threads;
  o.cache_path = a.calib_cache;
  o.data_label = label;
  o.progress = [&](size_t n) { progress_line(a.quiet, fmt::format("calibrating: {} samples", n)); };
  const size_t n = quant::calibrate(p.graph, p.plan, next, o);
  progress_end(a.quiet);
  return n;
}

std::vector<std::string> joule_op_nodes(const ir::Graph& g) {
  std::vector<std::string> v;
  for (auto& n : g.nodes)
    if (n->domain == "joule") v.push_back(n->name);
  return v;
}

runtime::Session fast_session(const ir::Graph& g, int threads, const std::string& int8) {
  ir::Graph run = g;
  runtime::SessionOptions so;
  so.threads = threads;
  apply_passes(run, "default", int8, &so);
  return runtime::Session(std::move(run), so);
}

data::EvalResult eval_graph(const ir::Graph& g, const data::Dataset& d, const QuantArgs& a, const std::string& what) {
  runtime::Session s = fast_session(g, a.threads, a.int8);
  auto r = data::evaluate(s, d, a.eval_samples, [&](size_t done, size_t total) {
    if (done % 100 == 0) progress_line(a.quiet, fmt::format("evaluating {}: {}/{}", what, done, total));
  });
  progress_end(a.quiet);
  return r;
}

}  // namespace joule::cli
