#include <fmt/core.h>

#include <chrono>

#include "joule/cli/commands.h"
#include "joule/cli/util.h"
#include "joule/profile/stats.h"
#include "joule/runtime/inputs.h"

namespace joule::cli {

namespace {
struct BenchArgs {
  std::string model;
  std::vector<std::string> inputs;
  int threads = 0, warmup = 5, runs = 30;
  std::string format = "table";
  std::string passes = "default", int8 = "real";
  AlgoFlags algo;
};
}  // namespace

Action add_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  app.add_option("model", a->model, "ONNX model file ('default' = the bundled Fashion-MNIST CNN)")->required();
  app.add_option("-i,--input", a->inputs, "input FILE or NAME=FILE; default: seeded random inputs");
  app.add_option("--threads", a->threads, "intra-op threads (default: all cores)")->check(CLI::NonNegativeNumber);
  app.add_option("--warmup", a->warmup, "untimed runs first")->check(CLI::NonNegativeNumber);
  app.add_option("--runs", a->runs, "timed runs")->check(CLI::PositiveNumber);
  app.add_option("--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  app.add_option("--passes", a->passes, "graph passes before timing: none, default or a comma-separated list")
      ->capture_default_str();
  add_int8_option(app, a->int8);
  add_algo_options(app, a->algo);
  return [a] {
    runtime::SessionOptions opt;
    opt.algo = a->algo.spec();
    opt.threads = a->threads;
    const std::string path = resolve_model_path(a->model);
    ir::Graph g = load_model_or_default(path);
    nlohmann::json pipeline = apply_passes(g, a->passes, a->int8, &opt);
    runtime::Session session(std::move(g), opt);
    runtime::TensorMap inputs =
        a->inputs.empty() ? runtime::random_inputs(session) : bind_inputs(a->inputs, session.input_names());
    for (int i = 0; i < a->warmup; ++i) session.run(inputs);
    std::vector<double> ms;
    for (int i = 0; i < a->runs; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      session.run(inputs);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    profile::Stats s = profile::summarize(ms);
    if (a->format == "json") {
      nlohmann::json j = {{"model", path}, {"threads", session.threads()}, {"warmup", a->warmup},
                          {"runs", a->runs}, {"latency_ms", profile::to_json(s)}, {"samples_ms", ms},
                          {"peak_activation_bytes", session.peak_bytes()}, {"engine", "joule " JOULE_VERSION},
                          {"passes", a->passes}, {"int8", a->int8}, {"nodes", {{"before_passes", pipeline["nodes_before"]},
                                                            {"after_passes", pipeline["nodes_after"]}}}};
      fmt::print("{}\n", j.dump(2));
    } else {
      fmt::print("{}: {} runs after {} warm-up, {} thread{}; passes {} ({} -> {} nodes)\n", path, a->runs,
                 a->warmup, session.threads(), session.threads() == 1 ? "" : "s", a->passes,
                 pipeline["nodes_before"].get<size_t>(), pipeline["nodes_after"].get<size_t>());
      fmt::print("latency ms: median {:.3f}  mean {:.3f}  std {:.3f}  min {:.3f}  max {:.3f}  p90 {:.3f}  p99 {:.3f}\n",
                 s.median, s.mean, s.std, s.min, s.max, s.p90, s.p99);
      fmt::print("3-sigma trimmed mean {:.3f} ({} discarded), cv {:.1f}%{}\n", s.trimmed_mean, s.trimmed, 100 * s.cv,
                 s.noisy ? "  [noisy: cv above 5%, take more runs or quiet the machine]" : "");
    }
    return 0;
  };
}

}  // namespace joule::cli
