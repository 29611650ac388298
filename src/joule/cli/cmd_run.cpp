#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "joule/cli/commands.h"
#include "joule/cli/util.h"
#include "joule/core/npy.h"
#include "joule/onnx/model_io.h"
#include "joule/runtime/session.h"

namespace joule::cli {

namespace fs = std::filesystem;

namespace {
struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::string outdir;
  int threads = 0;
  int repeat = 1;
  std::string passes = "default", int8 = "real";
  AlgoFlags algo;
};

}  // namespace

Action add_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  app.add_option("model", a->model, "ONNX model file ('default' = the bundled Fashion-MNIST CNN)")->required();
  app.add_option("-i,--input", a->inputs, "input FILE or NAME=FILE (.npy or .pb); bare files bind in order");
  app.add_option("-o,--outdir", a->outdir, "write OUTDIR/<output>.npy");
  app.add_option("--threads", a->threads, "intra-op threads (default: all cores)")->check(CLI::NonNegativeNumber);
  app.add_option("--repeat", a->repeat, "run N times and report the fastest and median time")->check(CLI::PositiveNumber);
  app.add_option("--passes", a->passes, "graph passes before running: none, default or a comma-separated list")
      ->capture_default_str();
  add_int8_option(app, a->int8);
  add_algo_options(app, a->algo);
  return [a] {
    runtime::SessionOptions opt;
    opt.algo = a->algo.spec();
    opt.threads = a->threads;
    ir::Graph g = load_model_or_default(a->model);
    apply_passes(g, a->passes, a->int8, &opt);
    runtime::Session session(std::move(g), opt);
    runtime::TensorMap inputs = bind_inputs(a->inputs, session.input_names());
    std::vector<double> ms;
    runtime::TensorMap out;
    for (int r = 0; r < a->repeat; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      out = session.run(inputs);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    if (!a->outdir.empty()) {
      std::error_code ec;
      fs::create_directories(a->outdir, ec);
      if (ec) fail(a->outdir + ": cannot create output directory: " + ec.message());
      for (auto& [name, t] : out) save_npy(t, (fs::path(a->outdir) / (safe_filename(name) + ".npy")).string());
    }
    for (auto& name : session.output_names()) {
      const Tensor& t = out.at(name);
      std::string preview;
      for (int64_t i = 0; i < std::min<int64_t>(t.numel(), 6); ++i)
        preview += (i ? ", " : "") + fmt::format("{:.4g}", t.value_as_double(i));
      if (t.numel() > 6) preview += ", ...";
      fmt::print("{} {}: [{}]\n", name, t.describe(), preview);
    }
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    fmt::print("time: {} run{} on {} thread{}: min {:.3f} ms, median {:.3f} ms; peak activation memory {}\n",
               ms.size(), ms.size() == 1 ? "" : "s", session.threads(), session.threads() == 1 ? "" : "s",
               sorted.front(), sorted[sorted.size() / 2], human_bytes(static_cast<double>(session.peak_bytes())));
    if (!a->outdir.empty()) fmt::print("outputs written to {}/\n", a->outdir);
    return 0;
  };
}

}  // namespace joule::cli
