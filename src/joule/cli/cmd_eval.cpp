// joule eval: top-1/top-5 of a classifier on labelled data; joule data: dataset tools.
#include <fmt/format.h>
#include <unistd.h>

#include "joule/cli/commands.h"
#include "joule/cli/data_flags.h"
#include "joule/cli/util.h"
#include "joule/core/error.h"
#include "joule/data/evaluate.h"

namespace joule::cli {

namespace {
struct EvalArgs {
  std::string model, data, passes = "default", format = "table", int8 = "real";
  std::vector<std::string> input_shapes;
  size_t limit = 0;
  int threads = 1;
  DataFlags flags;
  AlgoFlags algo;
};
}  // namespace

Action add_eval(CLI::App& app) {
  auto a = std::make_shared<EvalArgs>();
  app.add_option("model", a->model, "ONNX model file ('default' = the bundled Fashion-MNIST CNN)")->required();
  app.add_option("--data", a->data, "labelled data SPEC: .npy (+ _labels.npy), IDX, JPEG class folder, LMDB")
      ->required();
  app.add_option("--limit", a->limit, "evaluate only the first N samples");
  app.add_option("--threads", a->threads, "intra-op threads")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--passes", a->passes, "graph passes: none, default or a list")->capture_default_str();
  app.add_option("--input-shape", a->input_shapes, "NAME=1,3,224,224 (or one shape for a one-input model)");
  app.add_option("--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  add_data_options(app, a->flags);
  add_int8_option(app, a->int8);
  add_algo_options(app, a->algo);
  return [a] {
    const std::string path = resolve_model_path(a->model);
    ir::Graph g = load_model_or_default(path);
    apply_input_shapes(g, a->input_shapes);
    std::string how;
    auto d = open_data(a->data, g, path, a->flags, &how);
    runtime::SessionOptions so;
    so.threads = a->threads;
    so.algo = a->algo.spec();
    apply_passes(g, a->passes, a->int8, &so);
    runtime::Session s(std::move(g), so);
    data::EvalResult r = data::evaluate(s, *d, a->limit, [](size_t done, size_t total) {
      if (isatty(2) && done % 200 == 0) fmt::print(stderr, "\revaluating {}/{}", done, total);
    });
    if (isatty(2)) fmt::print(stderr, "\r{:<40}\r", "");
    if (a->format == "json") {
      nlohmann::json j = r.to_json();
      j["model"] = path;
      j["data"] = d->describe();
      j["preprocessing"] = how;
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("{} on {}\npreprocessing: {}\n", path, d->describe(), how);
    fmt::print("top-1 {:.2f}% ({}/{})", 100 * r.top1_rate(), r.top1, r.samples);
    if (r.classes >= 5) fmt::print("  top-5 {:.2f}%", 100 * r.top5_rate());
    fmt::print("  samples {}{}  {:.1f} s\n", r.samples, r.skipped ? fmt::format(" ({} skipped)", r.skipped) : "",
               r.seconds);
    return 0;
  };
}

Action add_data(CLI::App& app) {
  app.require_subcommand(1);
  auto folder = std::make_shared<std::string>(), out = std::make_shared<std::string>();
  CLI::App* conv = app.add_subcommand("convert", "JPEG class folders -> LMDB (JPEG bytes and labels, decoded at read)");
  conv->add_option("folder", *folder, "directory of class sub-folders of JPEGs")->required();
  conv->add_option("out", *out, "LMDB directory to create (must not exist)")->required();
  return [folder, out] {
    std::vector<std::string> skipped;
    const size_t n = data::convert_to_lmdb(*folder, *out, &skipped);
    for (auto& s : skipped) fmt::print(stderr, "joule: skipped {}\n", s);
    fmt::print("wrote {}: {} records{}\n", *out, n, skipped.empty() ? "" : fmt::format(", {} skipped", skipped.size()));
    return 0;
  };
}

}  // namespace joule::cli
