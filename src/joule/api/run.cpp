#include "joule/api/run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "joule/core/error.h"
#include "joule/core/npy.h"
#include "joule/onnx/model_io.h"
#include "joule/runtime/inputs.h"
#include "joule/runtime/numerics.h"

namespace joule::api {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::string model_label(const Model& m) { return m.path().empty() ? m.name() : m.path(); }

Tensor read_tensor(const std::string& path) {
  if (ends_with(path, ".pb")) return onnx::load_tensor_pb(path);
  if (ends_with(path, ".npy")) return load_npy(path);
  fail(path + ": input files must be .npy or ONNX TensorProto .pb");
}

runtime::TensorMap read_inputs(const std::vector<std::string>& specs, const std::vector<std::string>& names,
                               const ir::Graph* graph) {
  runtime::TensorMap m;
  size_t next = 0;
  for (auto& s : specs) {
    auto eq = s.find('=');
    std::string name, file = s;
    if (eq != std::string::npos && std::find(names.begin(), names.end(), s.substr(0, eq)) != names.end()) {
      name = s.substr(0, eq);
      file = s.substr(eq + 1);
    } else {
      while (next < names.size() && m.count(names[next])) ++next;
      if (next >= names.size())
        fail("too many inputs: the model takes " + std::to_string(names.size()) + " (" + s + " has no input left to bind)");
      name = names[next++];
    }
    if (m.count(name)) fail("input '" + name + "' given twice");
    const ir::TensorType* declared = graph ? graph->type_of(name) : nullptr;
    // A sequence or optional input: an ONNX SequenceProto / OptionalProto file.
    m[name] = declared && !declared->is_tensor() && ends_with(file, ".pb") ? onnx::load_value_pb(file, *declared) : read_tensor(file);
  }
  for (auto& n : names)
    if (!m.count(n)) fail("missing input '" + n + "': pass -i FILE or -i " + n + "=FILE");
  return m;
}

nlohmann::json first_values(const Tensor& t, int64_t n) {
  nlohmann::json first = nlohmann::json::array();
  if (!t.is_tensor()) {
    for (size_t i = 0; i < t.items().size() && static_cast<int64_t>(i) < n; ++i) first.push_back(t.items()[i].describe());
    return first;
  }
  for (int64_t i = 0; i < std::min<int64_t>(t.numel(), n); ++i) {
    if (t.dtype() == DType::String) first.push_back(t.data<std::string>()[i]);
    else first.push_back(t.value_as_double(i));
  }
  return first;
}

std::vector<std::pair<std::string, Tensor>> output_files(const std::string& dir, const std::string& name, const Tensor& t) {
  const std::string base = (std::filesystem::path(dir) / safe_filename(name)).string();
  std::vector<std::pair<std::string, Tensor>> files;
  auto add = [&](const std::string& path, const Tensor& v) {
    if (v.dtype() == DType::String) fail("output '" + name + "' holds strings, which .npy files cannot; use --format json");
    files.emplace_back(path, v);
  };
  const Tensor* v = &t;
  if (t.kind() == ValueKind::Optional) {
    if (t.items().empty()) return files;
    v = &t.items()[0];
  }
  if (v->is_tensor()) {
    add(base + ".npy", *v);
  } else {
    for (size_t i = 0; i < v->items().size(); ++i) add(base + "." + std::to_string(i) + ".npy", v->items()[i]);
  }
  return files;
}

nlohmann::json RunResult::to_json() const {
  nlohmann::json outs = nlohmann::json::array();
  for (const std::string& name : output_names) {
    const Tensor& t = outputs.at(name);
    nlohmann::json o = {{"name", name}, {"dtype", dtype_name(t.dtype())}, {"first_values", first_values(t)}};
    if (t.is_tensor()) o["shape"] = t.shape();
    else o["kind"] = value_kind_name(t.kind()), o["items"] = t.items().size();
    outs.push_back(o);
  }
  nlohmann::json j = {{"model", model},
                      {"threads", threads},
                      {"outputs", outs},
                      {"latency_ms", profile::to_json(profile::summarize(samples_ms))},
                      {"samples_ms", samples_ms},
                      {"peak_activation_bytes", peak_activation_bytes},
                      {"precision", precision.to_json()},
                      {"nodes", {{"before_passes", pipeline["nodes_before"]}, {"after_passes", pipeline["nodes_after"]}}}};
  if (!numerics.is_null()) j["numerics"] = numerics;
  return j;
}

namespace {
// The session for run and bench: `m` is given up first, so that the weights its kernels packed
// are held once.
Prepared prepare_releasing(Model& m, const runtime::TensorMap& inputs, PrepareOptions o) {
  o.release_packed = true;
  if (o.check_inputs.empty()) o.check_inputs = inputs;  // bf16's ladder checks on the run's input
  Model resolved = m.resolved_for(inputs);
  m = Model();
  return prepare(std::move(resolved), o);
}
}  // namespace

RunResult run(Model m, const RunOptions& o, const Hooks& hooks) {
  if (o.repeat < 1) fail("repeat: " + std::to_string(o.repeat) + " (at least 1)");
  RunResult r;
  r.model = model_label(m);
  Prepared p = prepare_releasing(m, o.inputs, o.prepare);
  runtime::Session& s = *p.session;
  r.output_names = s.output_names();
  r.threads = s.threads();
  r.pipeline = std::move(p.pipeline);
  r.precision = std::move(p.precision);
  runtime::NumericsObserver numerics;
  if (o.check_numerics) s.add_observer(&numerics);
  for (int i = 0; i < o.repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    r.outputs = s.run(o.inputs);
    r.samples_ms.push_back(ms_since(t0));
    hooks.report("run", i + 1, o.repeat, o.repeat > 1 ? fmt::format("run {}/{}", i + 1, o.repeat) : "");
  }
  s.clear_observers();
  if (o.check_numerics) {
    r.numerics = numerics.to_json();
    r.numerics_summary = numerics.summary();
  }
  r.peak_activation_bytes = s.peak_bytes();
  return r;
}

nlohmann::json BenchResult::to_json() const {
  return {{"model", model},
          {"threads", threads},
          {"warmup", warmup},
          {"runs", runs},
          {"latency_ms", profile::to_json(latency_ms)},
          {"samples_ms", samples_ms},
          {"peak_activation_bytes", peak_activation_bytes},
          {"engine", "joule " JOULE_VERSION},
          {"passes", passes},
          {"int8", int8},
          {"precision", precision.to_json()},
          {"nodes", {{"before_passes", nodes_before}, {"after_passes", nodes_after}}},
          {"numerics", numerics}};
}

BenchResult bench(Model m, const BenchOptions& o, const Hooks& hooks) {
  if (o.runs < 1) fail("runs: " + std::to_string(o.runs) + " (at least 1)");
  if (o.warmup < 0) fail("warmup: " + std::to_string(o.warmup) + " is negative");
  BenchResult r;
  r.model = model_label(m);
  Prepared p = prepare_releasing(m, o.inputs, o.prepare);
  runtime::Session& s = *p.session;
  const runtime::TensorMap inputs = o.inputs.empty() ? runtime::random_inputs(s) : o.inputs;
  const size_t total = static_cast<size_t>(o.warmup + o.runs);
  if (o.check_numerics) {
    runtime::NumericsReport n = runtime::check_numerics(s, inputs);
    r.numerics = std::move(n.json);
    r.numerics_summary = std::move(n.summary);
  }
  for (int i = 0; i < o.warmup; ++i) {
    s.run(inputs);
    hooks.report("warm-up", i + 1, total, fmt::format("warm-up {}/{}", i + 1, o.warmup));
  }
  for (int i = 0; i < o.runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    s.run(inputs);
    r.samples_ms.push_back(ms_since(t0));
    hooks.report("timing", o.warmup + i + 1, total, fmt::format("run {}/{}", i + 1, o.runs));
  }
  r.threads = s.threads();
  r.warmup = o.warmup;
  r.runs = o.runs;
  r.latency_ms = profile::summarize(r.samples_ms);
  r.peak_activation_bytes = s.peak_bytes();
  r.passes = o.prepare.passes;
  r.int8 = o.prepare.int8;
  r.nodes_before = p.pipeline["nodes_before"].get<size_t>();
  r.nodes_after = p.pipeline["nodes_after"].get<size_t>();
  r.precision = std::move(p.precision);
  return r;
}

}  // namespace joule::api
