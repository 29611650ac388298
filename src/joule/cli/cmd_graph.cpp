#include <fmt/core.h>

#include <cstdio>
#include <filesystem>

#include "joule/cli/commands.h"
#include "joule/cli/util.h"
#include "joule/core/file_util.h"
#include "joule/ir/printer.h"
#include "joule/passes/infer_shapes.h"

namespace joule::cli {

namespace {
struct GraphArgs {
  std::string model, out;
};

std::string extension(const std::string& p) {
  auto e = std::filesystem::path(p).extension().string();
  return e.empty() ? "" : e.substr(1);
}
}  // namespace

Action add_graph(CLI::App& app) {
  auto a = std::make_shared<GraphArgs>();
  app.add_option("model", a->model, "ONNX model file")->required();
  app.add_option("-o,--output", a->out, "FILE.svg|.png|.pdf (rendered by Graphviz dot), .dot or .txt")->required();
  return [a] {
    const std::string ext = extension(a->out);
    if (ext != "svg" && ext != "png" && ext != "pdf" && ext != "dot" && ext != "txt")
      fail(a->out + ": unknown output format '" + ext + "' (use .svg, .png, .pdf, .dot or .txt)");
    ir::Graph g = load_model_or_default(a->model);
    try {
      passes::infer_shapes(g);
    } catch (const Error&) {
      // Draw what we have: an inconsistent model is still worth looking at.
    }
    if (ext == "txt") {
      write_file_atomic(a->out, ir::to_text(g));
    } else if (ext == "dot") {
      write_file_atomic(a->out, ir::to_dot(g));
    } else {
      std::string dot_path = a->out + ".dot.tmp";
      write_file_atomic(dot_path, ir::to_dot(g));
      std::string tmp_out = a->out + ".tmp";
      std::string cmd = "dot -T" + ext + " -o '" + tmp_out + "' '" + dot_path + "' 2>&1";
      int rc = std::system(cmd.c_str());
      std::filesystem::remove(dot_path);
      if (rc != 0) {
        std::filesystem::remove(tmp_out);
        fail("Graphviz 'dot' failed to render " + a->out + " (is graphviz installed? scripts/setup.sh installs it)");
      }
      std::filesystem::rename(tmp_out, a->out);
    }
    fmt::print("wrote {} ({} nodes)\n", a->out, g.nodes.size());
    return 0;
  };
}

}  // namespace joule::cli
