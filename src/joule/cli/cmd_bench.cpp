#include <fmt/core.h>

#include "joule/api/run.h"
#include "joule/cli/commands.h"
#include "joule/cli/util.h"

namespace joule::cli {

namespace {
struct BenchArgs {
  std::string model, format = "table", store;
  std::vector<std::string> inputs;
  api::BenchOptions opt;
};
}  // namespace

Action add_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  add_model_arg(app, a->model);
  app.add_option("-i,--input", a->inputs, "input FILE or NAME=FILE; default: seeded random inputs");
  app.add_option("--warmup", a->opt.warmup, "untimed runs first")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--runs", a->opt.runs, "timed runs")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  app.add_flag("--check-numerics", a->opt.check_numerics,
               "one run before timing counts NaN and Inf in every node's outputs and names the first node that has any");
  add_prepare_options(app, a->opt.prepare, "graph passes before timing: none, default or a comma-separated list");
  add_store_option(app, a->store);
  return [a] {
    api::Model m = api::Model::load(a->model);
    if (!a->inputs.empty()) a->opt.inputs = api::read_inputs(a->inputs, m.input_names(), &m.graph());
    const api::BenchResult r = api::bench(std::move(m), a->opt, terminal_hooks());
    end_status();
    record_run(a->store, "bench", r.model, r.to_json());
    if (a->format == "json") {
      fmt::print("{}\n", r.to_json().dump(2));
      return 0;
    }
    const profile::Stats& s = r.latency_ms;
    fmt::print("{}: {} runs after {} warm-up, {} thread{}; passes {} ({} -> {} nodes)\n", r.model, r.runs, r.warmup,
               r.threads, r.threads == 1 ? "" : "s", r.passes, r.nodes_before, r.nodes_after);
    fmt::print("latency ms: median {:.3f}  mean {:.3f}  std {:.3f}  min {:.3f}  max {:.3f}  p90 {:.3f}  p99 {:.3f}\n",
               s.median, s.mean, s.std, s.min, s.max, s.p90, s.p99);
    fmt::print("3-sigma trimmed mean {:.3f} ({} discarded), cv {:.1f}%{}\n", s.trimmed_mean, s.trimmed, 100 * s.cv,
               s.noisy ? "  [noisy: cv above 5%, take more runs or quiet the machine]" : "");
    if (r.precision.precision != "fp32") fmt::print("{}\n", r.precision.summary());
    if (!r.numerics_summary.empty()) fmt::print("{}\n", r.numerics_summary);
    return 0;
  };
}

}  // namespace joule::cli
