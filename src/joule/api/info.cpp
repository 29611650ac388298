#include "joule/api/info.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/cuda/backend.h"
#include "joule/ir/printer.h"
#include "joule/passes/check_support.h"
#include "joule/passes/infer_shapes.h"
#include "joule/passes/model_info.h"

namespace joule::api {

nlohmann::json info(const Model& model, const InfoOptions& o) {
  ir::Graph g = model.with_input_shapes(o.input_shapes).graph();
  passes::require_supported(g, model.name());  // every unsupported op and type at once
  const std::string after = o.plan && o.after_passes.empty() ? "default" : o.after_passes;
  runtime::SessionOptions so;
  so.threads = o.threads;
  so.algo = o.algo.spec();
  so.device = cuda::parse_device_syntax(o.device);  // (the passes' layouts; prepare() opens the GPU)
  check_precision(o.precision);
  precision_algorithms(o.precision, so.algo);  // its layouts follow the bf16 choice too
  nlohmann::json pipeline;
  if (!after.empty()) pipeline = apply_passes(g, after, "simulated", &so);
  nlohmann::json j = passes::model_info(g);
  if (!pipeline.is_null()) j["passes"] = pipeline;
  if (o.plan) {  // the session every command would run: prepare() on the model as loaded
    PrepareOptions po;
    po.threads = o.threads;
    po.passes = after;
    po.algo = o.algo;
    po.device = o.device;
    po.gpu_math = o.gpu_math;
    po.gpu_fp32 = o.gpu_fp32;
    po.precision = o.precision;
    po.bf16_min_sqnr_db = o.bf16_min_sqnr_db;
    const Prepared p = prepare(model.with_input_shapes(o.input_shapes), po);
    j["plan"] = plan_json(*p.session);
    if (o.precision != "fp32") j["precision"] = p.precision.to_json();
  }
  return j;
}

std::string render_dot(const std::string& dot, const std::string& format) {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() / fmt::format("joule_dot_{}_{}", getpid(), std::rand());
  const std::string in = tmp.string() + ".dot", out = tmp.string() + "." + format;
  write_file_atomic(in, dot);
  const std::string cmd = "dot -T" + format + " -o '" + out + "' '" + in + "' 2>/dev/null";
  const int rc = std::system(cmd.c_str());
  fs::remove(in);
  if (rc != 0) {
    fs::remove(out);
    fail("Graphviz 'dot' failed to render a graph as " + format + " (is graphviz installed? scripts/setup.sh installs it)");
  }
  std::string bytes = read_file(out);
  fs::remove(out);
  return bytes;
}

size_t draw_graph(const Model& m, const std::string& out) {
  std::string ext = std::filesystem::path(out).extension().string();
  if (!ext.empty()) ext = ext.substr(1);
  if (ext != "svg" && ext != "png" && ext != "pdf" && ext != "dot" && ext != "txt")
    fail(out + ": unknown output format '" + ext + "' (use .svg, .png, .pdf, .dot or .txt)");
  ir::Graph g = m.graph();
  try {
    passes::infer_shapes(g);
  } catch (const Error&) {
    // Draw what we have: an inconsistent model is still worth looking at.
  }
  if (ext == "txt") {
    write_file_atomic(out, ir::to_text(g));
  } else if (ext == "dot") {
    write_file_atomic(out, ir::to_dot(g));
  } else {
    write_file_atomic(out, render_dot(ir::to_dot(g), ext));
  }
  return g.nodes.size();
}

}  // namespace joule::api
