#include <fmt/core.h>

#include "joule/api/info.h"
#include "joule/cli/commands.h"

namespace joule::cli {

Action add_graph(CLI::App& app) {
  auto model = std::make_shared<std::string>(), out = std::make_shared<std::string>();
  app.add_option("model", *model, "ONNX model file")->required();
  app.add_option("-o,--output", *out, "FILE.svg|.png|.pdf (rendered by Graphviz dot), .dot or .txt")->required();
  return [model, out] {
    const size_t nodes = api::draw_graph(api::Model::load(*model), *out);
    fmt::print("wrote {} ({} nodes)\n", *out, nodes);
    return 0;
  };
}

}  // namespace joule::cli
