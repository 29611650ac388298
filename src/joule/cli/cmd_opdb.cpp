#include <fmt/core.h>
#include <fmt/ranges.h>

#include "joule/api/opdb.h"
#include "joule/cli/commands.h"
#include "joule/cli/util.h"
#include "joule/core/file_util.h"

namespace joule::cli {

namespace {
struct OpdbArgs {
  api::OpdbOptions opt;
  std::string config, stage = "quick", format = "table", out, model;
  std::vector<std::string> models;
  api::PredictOptions predict;
  bool csv = true;
};

void add_measure_options(CLI::App& s, OpdbArgs& a) {
  s.add_option("--db", a.opt.db, "operator database (default $JOULE_OPDB or ~/.cache/joule/opdb.sqlite)");
  s.add_option("--threads", a.opt.threads, "thread counts, e.g. 1,2 (0: every core)")->delimiter(',')->capture_default_str();
  s.add_option("--runs", a.opt.runs, "samples per row, at least")->check(CLI::PositiveNumber)->capture_default_str();
  s.add_option("--sample-ms", a.opt.sample_ms, "a sample is the mean of the calls filling this many ms")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  s.add_option("--min-time", a.opt.min_time_s, "and at least this many seconds per row")->capture_default_str();
  s.add_option("--regimes", a.opt.regimes,
               "cache regimes: reused (warm), fresh (rotating inputs > LLC), cold (caches flushed, inputs read: "
               "weights from memory; nodes with weights only)")
      ->delimiter(',')
      ->check(CLI::IsMember({"reused", "fresh", "cold"}));
  s.add_option("--energy", a.opt.energy, "energy per call: none, auto, estimate, rapl, perf, nvml")
      ->check(CLI::IsMember({"none", "auto", "estimate", "rapl", "perf", "nvml"}))
      ->capture_default_str();
  s.add_flag("--force", a.opt.force, "re-measure rows the store already has");
  s.add_option("--passes", a.opt.passes, "graph passes before measuring (default: as joule run)")->capture_default_str();
  add_algo_options(s, a.opt.algo);
  s.add_option("--format", a.format, "table or json")->check(CLI::IsMember({"table", "json"}));
}

int print_report(const api::OpdbReport& r, const std::string& format) {
  end_status();
  if (format == "json") {
    fmt::print("{}\n", r.to_json().dump(2));
    return 0;
  }
  if (!r.config.empty()) fmt::print("sweep {} (stage {}): {} points\n", r.config, r.stage, r.points);
  for (auto& m : r.models) {
    fmt::print("{} ({} thread{}): {} steps, {} distinct, {} measured, {} already in the store{}\n", m.model, m.threads,
               m.threads == 1 ? "" : "s", m.stats.steps, m.stats.distinct, m.stats.measured, m.stats.known,
               m.stats.skipped.empty() ? "" : fmt::format(", {} not measurable alone", m.stats.skipped.size()));
    for (auto& s : m.stats.skipped) fmt::print("  skipped: {}\n", s);
  }
  fmt::print("{}: {} rows; {:.1f} s; energy {}\n", r.db, r.rows, r.seconds,
             r.energy_source.empty() ? "not measured" : r.energy_source);
  return 0;
}
}  // namespace

Action add_opdb(CLI::App& app) {
  auto a = std::make_shared<OpdbArgs>();
  app.require_subcommand(1);
  CLI::App* sweep = app.add_subcommand("sweep", "Measure the operators of a sweep config's grid (default: the shipped one)");
  sweep->add_option("config", a->config, "sweep YAML (default: examples/opdb/default.yaml)");
  sweep->add_option("--stage", a->stage, "sanity (one point per entry), quick or full")
      ->check(CLI::IsMember({"sanity", "quick", "full"}))
      ->capture_default_str();
  add_measure_options(*sweep, *a);
  CLI::App* add = app.add_subcommand("add", "Measure every distinct layer of models (after the passes) into the store");
  add->add_option("models", a->models, "ONNX models")->required();
  add_measure_options(*add, *a);
  CLI::App* stats = app.add_subcommand("stats", "What the store holds: rows per op type, regime, threads, origin");
  stats->add_option("--db", a->opt.db, "operator database");
  stats->add_option("--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  CLI::App* exp = app.add_subcommand("export", "Every row of the store as CSV");
  exp->add_option("--db", a->opt.db, "operator database");
  exp->add_flag("--csv", a->csv, "CSV (the only format)");
  exp->add_option("-o,--output", a->out, "file (default: stdout)");
  CLI::App* cov = app.add_subcommand("coverage", "How much of a model's predicted time the store covers exactly, and what to sweep next");
  add_model_arg(*cov, a->model);
  cov->add_option("--db", a->predict.db, "operator database");
  add_threads_option(*cov, a->predict.threads);
  cov->add_option("--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));

  return [a, sweep, add, stats, exp, cov] {
    if (sweep->parsed()) return print_report(api::opdb_sweep(a->config, a->stage, a->opt, terminal_hooks()), a->format);
    if (add->parsed()) {
      std::vector<api::Model> ms;
      for (auto& p : a->models) ms.push_back(api::Model::load(p));
      return print_report(api::opdb_add(ms, a->opt, terminal_hooks()), a->format);
    }
    if (stats->parsed()) {
      const nlohmann::json j = api::opdb_stats(a->opt.db);
      if (a->format == "json") {
        fmt::print("{}\n", j.dump(2));
        return 0;
      }
      fmt::print("{}: schema {}, {} rows ({} noisy, largest cv {:.1f}%)\n", j["db"].get<std::string>(),
                 j["schema_version"].get<int>(), j["rows"].get<size_t>(), j["noisy_rows"].get<int>(),
                 100 * j["max_cv"].get<double>());
      for (const char* k : {"op_types", "regimes", "threads", "modes", "origins", "cpus", "joule_versions"}) {
        fmt::print("{}:", k);
        for (auto& [name, n] : j[k].items()) fmt::print("  {} {}", name, n.get<int>());
        fmt::print("\n");
      }
      return 0;
    }
    if (exp->parsed()) {
      const std::string csv = api::opdb_export_csv(a->opt.db);
      if (a->out.empty())
        fmt::print("{}", csv);
      else
        write_file_atomic(a->out, csv);
      return 0;
    }
    const api::CoverageReport r = api::opdb_coverage(api::Model::load(a->model), a->predict);
    if (a->format == "json") {
      fmt::print("{}\n", r.to_json().dump(2));
      return 0;
    }
    const auto& p = r.prediction;
    fmt::print("{}: predicted {:.3f} ms at {} thread{}; of that time: {}\n", p.model, p.latency_ms, p.threads,
               p.threads == 1 ? "" : "s", p.coverage_text());
    for (auto& g : r.gaps) fmt::print("  not exact: {:<28} {:5.1f}%  {} layer{}\n", g.op_type, g.time_pct, g.layers, g.layers == 1 ? "" : "s");
    if (r.exact_pct >= 90)
      fmt::print("exact coverage {:.1f}% >= 90%\n", r.exact_pct);
    else
      fmt::print("to pass 90% exact, sweep or add: {} (joule opdb add {} measures this model's own layers)\n",
                 fmt::join(r.sweep_next, ", "), a->model);
    return 0;
  };
}

}  // namespace joule::cli
