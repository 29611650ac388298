#include <fmt/core.h>

#include "joule/api/profile.h"
#include "joule/api/run.h"
#include "joule/cli/commands.h"
#include "joule/cli/util.h"

namespace joule::cli {

namespace {
struct ProfileArgs {
  std::string model, format = "table", store;
  std::vector<std::string> inputs;
  int warmup = 5, runs = 30, top = 15;
  bool quiet = false, no_layer_energy = false;
  api::ProfileOptions opt;
};
}  // namespace

Action add_profile(CLI::App& app) {
  auto a = std::make_shared<ProfileArgs>();
  api::ProfileOptions& o = a->opt;
  add_model_arg(app, a->model);
  app.add_option("-i,--input", a->inputs, "input FILE or NAME=FILE; default: seeded random inputs");
  app.add_option("--threads", o.threads, "intra-op threads; a list (1,2) sweeps (default: all cores)")->delimiter(',');
  auto* warm = app.add_option("--warmup", a->warmup, "untimed runs first (default 5)")->check(CLI::NonNegativeNumber);
  app.add_option("--warmup-time", o.warmup_time_s, "untimed runs for this many seconds instead")
      ->check(CLI::NonNegativeNumber)->excludes(warm);
  auto* runs = app.add_option("--runs", a->runs, "timed runs of each kind, plain and instrumented (default 30)")
                   ->check(CLI::PositiveNumber);
  app.add_option("--min-time", o.min_time_s, "keep running until the plain runs took this many seconds")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--top", a->top, "layers shown in the table (0: all; files always have all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--coverage", o.coverage, "report how many op types cover this share of the time")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("-o,--output", o.out_dir, "write <model>_overall.csv, <model>_layers.csv, profile.json, trace.json");
  app.add_option("--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  app.add_option("--opdb", o.opdb, "append the layers' times to this operator database as in-model rows");
  app.add_option("--energy", o.energy, "none, auto (rapl, perf, nvml, then the estimator), rapl, perf, nvml, estimate")
      ->check(CLI::IsMember({"none", "auto", "rapl", "perf", "nvml", "estimate"}));
  app.add_option("--energy-profile", o.energy_profile, "device profile JSON for the estimator (default: built in, "
                                                        "same as data/energy/default_cpu.json)");
  app.add_option("--energy-window", o.energy_window_s, "seconds per sensor window (default: the sensor's own)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--powercap-root", o.powercap_root, "powercap sysfs root for RAPL (default /sys/class/powercap)");
  app.add_flag("--no-layer-energy", a->no_layer_energy, "skip the per-layer energy replay");
  app.add_flag("--check-numerics", a->opt.check_numerics,
               "one run after the warm-up counts NaN and Inf in every node's outputs and names the first node that has any");
  app.add_option("--batch", o.batches, "batch sizes to sweep, e.g. 1,8,32")->delimiter(',');
  app.add_option("--input-size", o.input_sizes, "input sizes (H = W of NCHW inputs) to sweep, e.g. 224,256")
      ->delimiter(',');
  app.add_option("--stage", o.stage, "preset sweep: sanity (1 point), quick (~10), full (~100)")
      ->check(CLI::IsMember({"sanity", "quick", "full"}));
  app.add_flag("-q,--quiet", a->quiet, "no progress on stderr");
  add_store_option(app, a->store);
  app.add_option("--passes", o.passes, "graph passes before profiling (at each sweep point's shapes): none, default or a list");
  add_int8_option(app, o.int8);
  add_precision_options(app, o.precision, o.bf16_min_sqnr_db);
  add_algo_options(app, o.algo);
  add_device_options(app, o.device, o.gpu_math, o.gpu_fp32);
  app.add_option("--algo-sweep", o.algo_sweep,
                 "profile one point per --algo value, e.g. \"conv=winograd;conv=onednn;auto\" (';'-separated)")
      ->delimiter(';');
  return [a, warm, runs] {
    api::ProfileOptions& o = a->opt;
    if (warm->count() > 0) o.warmup = a->warmup;
    if (runs->count() > 0) o.runs = a->runs;
    o.layer_energy = !a->no_layer_energy;
    const api::Model m = api::Model::load(a->model);
    if (!a->inputs.empty()) o.inputs = api::read_inputs(a->inputs, m.input_names(), &m.graph());
    const api::ProfileReport r = api::profile(m, o, terminal_hooks(a->quiet));
    end_status(a->quiet);
    record_run(a->store, "profile", r.model, r.to_json());
    if (a->format == "json") {
      fmt::print("{}\n", r.to_json().dump(2));
      return 0;
    }
    if (!r.sweep) {
      for (auto& p : r.points) fmt::print("{}", profile::format_report(p, static_cast<size_t>(a->top)));
    } else {
      fmt::print("{:<12} {:<10} {:>6} {:>6} {:>8} {:>10} {:>10} {:>10} {:>8}  {}\n", "model", "algorithm", "size",
                 "batch", "threads", "median_ms", "p90_ms", "J/inf", "attrib%", "energy_source");
      for (auto& p : r.points)
        fmt::print("{:<12} {:<10} {:>6} {:>6} {:>8} {:>10.3f} {:>10.3f} {:>10} {:>8.1f}  {}\n", p.model, p.algorithm,
                   p.input_size, p.batch, p.threads, p.plain_ms.median, p.plain_ms.p90,
                   p.energy ? fmt::format("{:.4g}", p.energy->joules_per_inference) : "-", p.attribution_pct,
                   p.energy ? p.energy->source : "none");
      fmt::print("{} point(s) measured, {} already in the results (skipped)\n", r.points.size(), r.skipped.size());
    }
    if (!o.opdb.empty()) fmt::print("{}: {} in-model rows\n", o.opdb, r.opdb_rows);
    if (!o.out_dir.empty())
      fmt::print("wrote {0}/{1}_overall.csv, {0}/{1}_layers.csv, {0}/profile.json, {0}/trace.json\n", o.out_dir,
                 r.model);
    return 0;
  };
}

}  // namespace joule::cli
