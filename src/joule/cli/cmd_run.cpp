#include <fmt/core.h>

#include <algorithm>
#include <filesystem>

#include "joule/api/run.h"
#include "joule/cli/commands.h"
#include "joule/cli/util.h"
#include "joule/core/npy.h"

namespace joule::cli {

namespace fs = std::filesystem;

namespace {
struct RunArgs {
  std::string model, outdir, format = "table";
  std::vector<std::string> inputs;
  api::RunOptions opt;
};
}  // namespace

Action add_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  add_model_arg(app, a->model);
  app.add_option("-i,--input", a->inputs, "input FILE or NAME=FILE (.npy or .pb); bare files bind in order");
  app.add_option("-o,--outdir", a->outdir, "write OUTDIR/<output>.npy");
  app.add_option("--repeat", a->opt.repeat, "run N times and report the fastest and median time")
      ->check(CLI::PositiveNumber);
  app.add_option("--format", a->format, "table or json (outputs described, not their data)")
      ->check(CLI::IsMember({"table", "json"}));
  app.add_flag("--check-numerics", a->opt.check_numerics,
               "count NaN and Inf in every node's outputs and name the first node that has any");
  add_prepare_options(app, a->opt.prepare, "graph passes before running: none, default or a comma-separated list");
  return [a] {
    a->opt.prepare.algo.spec();  // a malformed --algo is reported before the inputs are read
    api::Model m = api::Model::load(a->model);
    a->opt.inputs = api::read_inputs(a->inputs, m.input_names(), &m.graph());
    const api::RunResult r = api::run(std::move(m), a->opt, terminal_hooks());
    end_status();
    if (!a->outdir.empty()) {
      std::error_code ec;
      fs::create_directories(a->outdir, ec);
      if (ec) fail(a->outdir + ": cannot create output directory: " + ec.message());
      std::vector<std::pair<std::string, Tensor>> files;  // all checked before any is written
      for (auto& [name, t] : r.outputs)
        for (auto& f : api::output_files(a->outdir, name, t)) files.push_back(std::move(f));
      for (auto& [path, t] : files) save_npy(t, path);
    }
    if (a->format == "json") {
      fmt::print("{}\n", r.to_json().dump(2));
      return 0;
    }
    for (auto& name : r.output_names) {
      const Tensor& t = r.outputs.at(name);
      std::string preview;
      const nlohmann::json first = api::first_values(t);
      for (size_t i = 0; i < first.size(); ++i)
        preview += (i ? ", " : "") + (first[i].is_number() ? fmt::format("{:.4g}", first[i].get<double>()) : first[i].dump());
      if (static_cast<int64_t>(first.size()) < (t.is_tensor() ? t.numel() : static_cast<int64_t>(t.items().size())))
        preview += ", ...";
      if (t.is_tensor()) fmt::print("{} {}: [{}]\n", name, t.describe(), preview);
      else fmt::print("{} {}\n", name, t.describe());  // a sequence or optional: its items' types
    }
    std::vector<double> sorted = r.samples_ms;
    std::sort(sorted.begin(), sorted.end());
    fmt::print("time: {} run{} on {} thread{}: min {:.3f} ms, median {:.3f} ms; peak activation memory {}\n",
               sorted.size(), sorted.size() == 1 ? "" : "s", r.threads, r.threads == 1 ? "" : "s", sorted.front(),
               sorted[sorted.size() / 2], human_bytes(static_cast<double>(r.peak_activation_bytes)));
    if (r.precision.precision != "fp32") fmt::print("{}\n", r.precision.summary());
    if (!r.numerics_summary.empty()) fmt::print("{}\n", r.numerics_summary);
    if (!a->outdir.empty()) fmt::print("outputs written to {}/\n", a->outdir);
    return 0;
  };
}

}  // namespace joule::cli
