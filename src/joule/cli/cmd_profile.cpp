#include <fmt/core.h>
#include <unistd.h>

#include <filesystem>

#include "joule/cli/commands.h"
#include "joule/cli/util.h"
#include "joule/passes/pass.h"
#include "joule/profile/sweep.h"

namespace joule::cli {

namespace {
struct ProfileArgs {
  std::string model, out_dir, format = "table", stage, energy = "none", energy_profile, powercap_root;
  std::vector<std::string> inputs;
  std::vector<int> threads;
  std::vector<int64_t> batches, sizes;
  int warmup = 5, runs = 30, top = 15;
  double warmup_time = 0, min_time = 0, coverage = 0.9, energy_window = 0;
  bool quiet = false, no_layer_energy = false;
  std::string passes = "default", int8 = "real";
  AlgoFlags algo;
  std::vector<std::string> algo_sweep;
};
}  // namespace

Action add_profile(CLI::App& app) {
  auto a = std::make_shared<ProfileArgs>();
  app.add_option("model", a->model, "ONNX model file ('default' = the bundled Fashion-MNIST CNN)")->required();
  app.add_option("-i,--input", a->inputs, "input FILE or NAME=FILE; default: seeded random inputs");
  app.add_option("--threads", a->threads, "intra-op threads; a list (1,2) sweeps (default: all cores)")
      ->delimiter(',');
  auto* warm = app.add_option("--warmup", a->warmup, "untimed runs first (default 5)")->check(CLI::NonNegativeNumber);
  app.add_option("--warmup-time", a->warmup_time, "untimed runs for this many seconds instead")
      ->check(CLI::NonNegativeNumber)->excludes(warm);
  auto* runs = app.add_option("--runs", a->runs, "timed runs of each kind, plain and instrumented (default 30)")
                   ->check(CLI::PositiveNumber);
  app.add_option("--min-time", a->min_time, "keep running until the plain runs took this many seconds")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--top", a->top, "layers shown in the table (0: all; files always have all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--coverage", a->coverage, "report how many op types cover this share of the time")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("-o,--output", a->out_dir, "write <model>_overall.csv, <model>_layers.csv, profile.json, trace.json");
  app.add_option("--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  app.add_option("--energy", a->energy, "none, auto (rapl, perf, nvml, then the estimator), rapl, perf, nvml, estimate")
      ->check(CLI::IsMember({"none", "auto", "rapl", "perf", "nvml", "estimate"}));
  app.add_option("--energy-profile", a->energy_profile, "device profile JSON for the estimator (default: built in, "
                                                         "same as data/energy/default_cpu.json)");
  app.add_option("--energy-window", a->energy_window, "seconds per sensor window (default: the sensor's own)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--powercap-root", a->powercap_root, "powercap sysfs root for RAPL (default /sys/class/powercap)");
  app.add_flag("--no-layer-energy", a->no_layer_energy, "skip the per-layer energy replay");
  app.add_option("--batch", a->batches, "batch sizes to sweep, e.g. 1,8,32")->delimiter(',');
  app.add_option("--input-size", a->sizes, "input sizes (H = W of NCHW inputs) to sweep, e.g. 224,256")
      ->delimiter(',');
  app.add_option("--stage", a->stage, "preset sweep: sanity (1 point), quick (~10), full (~100)")
      ->check(CLI::IsMember({"sanity", "quick", "full"}));
  app.add_flag("-q,--quiet", a->quiet, "no progress on stderr");
  app.add_option("--passes", a->passes, "graph passes before profiling (at each sweep point's shapes): none, default or a list");
  add_int8_option(app, a->int8);
  add_algo_options(app, a->algo);
  app.add_option("--algo-sweep", a->algo_sweep,
                 "profile one point per --algo value, e.g. \"conv=winograd;conv=onednn;auto\" (';'-separated)")
      ->delimiter(';');
  return [a, warm, runs] {
    const std::string path = resolve_model_path(a->model);
    ir::Graph g = load_model_or_default(path);
    profile::ProfileOptions opt;
    opt.model_name = safe_filename(std::filesystem::path(path).stem().string());
    opt.warmup = a->warmup;
    opt.warmup_time_s = a->warmup_time;
    opt.runs = a->runs;
    opt.min_time_s = a->min_time;
    opt.coverage = a->coverage;
    opt.energy = a->energy;
    opt.meter.estimate_profile = a->energy_profile;
    opt.meter.min_window_s = a->energy_window;
    if (!a->powercap_root.empty()) opt.meter.powercap_root = a->powercap_root;
    opt.layer_energy = !a->no_layer_energy;
    opt.passes = passes::parse_pipeline(a->passes);
    if (a->int8 == "real") opt.passes = passes::int8_pipeline(opt.passes);
    opt.algo = a->algo.spec();
    profile::SweepSpec spec;
    spec.batches = a->batches;
    spec.input_sizes = a->sizes;
    for (const std::string& v : a->algo_sweep) {
      kernels::AlgoSpec check;
      check.add(v);  // one-line error for a malformed value before anything runs
      spec.algos.push_back(v);
    }
    if (a->threads.size() == 1) opt.threads = a->threads[0];
    else spec.threads = a->threads;
    profile::apply_stage(a->stage, spec, opt, runs->count() > 0, warm->count() > 0 || a->warmup_time > 0);
    runtime::TensorMap given;
    if (!a->inputs.empty()) {
      ir::Graph probe = g;
      runtime::Session s(std::move(probe), {});
      given = bind_inputs(a->inputs, s.input_names());
    }
    const size_t npoints = profile::sweep_points(spec, opt.threads).size();
    const bool sweep = npoints > 1 || !a->stage.empty();
    const bool show = !a->quiet && isatty(2);
    auto progress = [&](const profile::SweepProgress& p) {
      if (!show || p.total < 2) return;
      fmt::print(stderr, "\r[{}/{}] {} skipped (already measured)  elapsed {:.0f}s  eta {}   ", p.done, p.total,
                 p.skipped, p.elapsed_s, p.eta_s < 0 ? std::string("?") : fmt::format("{:.0f}s", p.eta_s));
      if (p.done == p.total) fmt::print(stderr, "\n");
    };
    profile::SweepOutcome out = profile::run_sweep(g, spec, opt, a->out_dir, sweep,
                                                   a->inputs.empty() ? nullptr : &given, progress);
    if (a->format == "json") {
      nlohmann::json pts = nlohmann::json::array();
      for (auto& r : out.measured) pts.push_back(profile::to_json(r));
      nlohmann::json skipped = nlohmann::json::array();
      for (auto& k : out.skipped) skipped.push_back(k.fields());
      fmt::print("{}\n", nlohmann::json{{"schema_version", 1}, {"model", opt.model_name}, {"points", pts},
                                        {"skipped_finished_points", skipped}}
                             .dump(2));
      return 0;
    }
    if (!sweep) {
      for (auto& r : out.measured) fmt::print("{}", profile::format_report(r, static_cast<size_t>(a->top)));
    } else {
      fmt::print("{:<12} {:<10} {:>6} {:>6} {:>8} {:>10} {:>10} {:>10} {:>8}  {}\n", "model", "algorithm", "size",
                 "batch", "threads", "median_ms", "p90_ms", "J/inf", "attrib%", "energy_source");
      for (auto& r : out.measured)
        fmt::print("{:<12} {:<10} {:>6} {:>6} {:>8} {:>10.3f} {:>10.3f} {:>10} {:>8.1f}  {}\n", r.model, r.algorithm,
                   r.input_size, r.batch, r.threads, r.plain_ms.median, r.plain_ms.p90,
                   r.energy ? fmt::format("{:.4g}", r.energy->joules_per_inference) : "-", r.attribution_pct,
                   r.energy ? r.energy->source : "none");
      fmt::print("{} point(s) measured, {} already in the results (skipped)\n", out.measured.size(),
                 out.skipped.size());
    }
    if (!a->out_dir.empty())
      fmt::print("wrote {0}/{1}_overall.csv, {0}/{1}_layers.csv, {0}/profile.json, {0}/trace.json\n", a->out_dir,
                 opt.model_name);
    return 0;
  };
}

}  // namespace joule::cli
