#include "joule/cli/util.h"

#include <fmt/core.h>

#include <cstdlib>
#include <filesystem>

#include "joule/core/npy.h"
#include "joule/onnx/model_io.h"
#include "joule/passes/pass.h"

namespace joule::cli {

std::string human_count(double v) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}{}", v, units[u]);
}

std::string human_bytes(double v) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

std::string resolve_model_path(const std::string& path) {
  if (path == "default" || path == "fashion_cnn") {
    for (const char* dir : {JOULE_MODELS_DIR, "models"}) {
      auto p = std::filesystem::path(dir) / "fashion_cnn.onnx";
      if (std::filesystem::exists(p)) return p.string();
    }
  }
  return path;
}

ir::Graph load_model_or_default(const std::string& path) { return onnx::load_model(resolve_model_path(path)); }

namespace {
Tensor load_input(const std::string& path) {
  if (path.size() > 3 && path.substr(path.size() - 3) == ".pb") return onnx::load_tensor_pb(path);
  if (path.size() > 4 && path.substr(path.size() - 4) == ".npy") return load_npy(path);
  fail(path + ": input files must be .npy or ONNX TensorProto .pb");
}
}  // namespace

runtime::TensorMap bind_inputs(const std::vector<std::string>& specs, const std::vector<std::string>& names) {
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
    m[name] = load_input(file);
  }
  for (auto& n : names)
    if (!m.count(n)) fail("missing input '" + n + "': pass -i FILE or -i " + n + "=FILE");
  return m;
}

void apply_input_shapes(ir::Graph& g, const std::vector<std::string>& specs) {
  for (const std::string& spec : specs) {
    auto eq = spec.find('=');
    std::string name = eq == std::string::npos ? "" : spec.substr(0, eq);
    std::string dims = eq == std::string::npos ? spec : spec.substr(eq + 1);
    if (name.empty()) {
      if (g.inputs.size() != 1) fail("--input-shape " + spec + ": the model has several inputs, write NAME=DIMS");
      name = g.inputs[0];
    }
    if (std::find(g.inputs.begin(), g.inputs.end(), name) == g.inputs.end())
      fail("--input-shape " + spec + ": '" + name + "' is not an input of the model");
    Shape shape;
    size_t pos = 0;
    while (pos <= dims.size()) {
      size_t comma = dims.find(',', pos);
      std::string item = dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      char* end = nullptr;
      long long v = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || v < 0) fail("--input-shape " + spec + ": '" + item + "' is not a dimension");
      shape.push_back(v);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    const ir::TensorType* t = g.type_of(name);
    if (t && t->has_shape && t->dims.size() != shape.size())
      fail("--input-shape " + spec + ": the model declares " + t->str() + " (rank " + std::to_string(t->dims.size()) + ")");
    g.types[name] = ir::TensorType::of(t ? t->dtype : DType::Float32, shape);
  }
}

std::string safe_filename(const std::string& s) {
  std::string r = s;
  for (char& c : r)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  if (r.empty() || r == "." || r == "..") r = "_" + r;
  return r;
}

nlohmann::json apply_passes(ir::Graph& g, const std::string& spec, const std::string& int8,
                            const runtime::SessionOptions* session) {
  std::vector<std::string> names = passes::parse_pipeline(spec);
  if (int8 == "real") names = passes::int8_pipeline(names);
  passes::PassOptions opt;
  const runtime::SessionOptions so = session ? *session : runtime::SessionOptions{};
  opt.channels_last_conv = [&so](const ir::Graph& graph, const ir::Node& n) {
    return so.algo.wants_channels_last(graph, n, so.threads);
  };
  if (const char* v = std::getenv("JOULE_VERIFY_PASSES")) opt.verify = std::string(v) == "1";
  return passes::run_pipeline(g, names, opt);
}

void add_int8_option(CLI::App& app, std::string& mode) {
  app.add_option("--int8", mode,
                 "quantized (QDQ) models: real (integer kernels where the pattern allows) or simulated (float QDQ)")
      ->check(CLI::IsMember({"real", "simulated"}))
      ->capture_default_str();
}

std::string int8_note(const std::string& mode) {
  return mode == "real" ? "int8 real: QDQ patterns on integer kernels (lower_int8, channels_last), the rest in float"
                        : "int8 simulated: the float engine runs the QDQ graph";
}

kernels::AlgoSpec AlgoFlags::spec() const {
  kernels::AlgoSpec s;
  if (!file.empty()) s.add_file(file);
  for (const std::string& a : algo) s.add(a);
  s.tuning_cache = tuning_cache;
  return s;
}

void add_algo_options(CLI::App& app, AlgoFlags& f) {
  app.add_option("--algo", f.algo,
                 "kernel algorithms: guess (default), auto (measure, cached), reference, CLASS=ALGO[,ALGO...] "
                 "(conv, gemm, matmul) or NODE=ALGO; repeatable");
  app.add_option("--algo-file", f.file, "YAML file of TARGET: ALGO or [ALGO, ...] (and default: guess|auto|reference)");
  app.add_option("--tuning-cache", f.tuning_cache,
                 "tuning cache for --algo auto (default $JOULE_TUNING_CACHE or ~/.cache/joule/tuning.json)");
}

}  // namespace joule::cli
