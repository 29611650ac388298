#include <fmt/core.h>

#include <unistd.h>

#include <filesystem>

#include "joule/cli/commands.h"
#include "joule/cli/util.h"
#include "joule/core/error.h"
#include "joule/experiment/runner.h"

namespace joule::cli {

namespace {
struct ExperimentArgs {
  std::string file, format = "table";
  experiment::ExperimentOptions opt;
  size_t index = 0;
  bool quiet = false;
};

void add_store_dir(CLI::App& s, ExperimentArgs& a) {
  s.add_option("file", a.file, "experiment YAML (docs/experiments.md)")->required();
  s.add_option("--store", a.opt.store, "results store: an SQLite file (default DIR/results.sqlite)");
  s.add_option("--dir", a.opt.dir, "run folders (default: the file's dir, else runs/NAME)");
  s.add_option("--only", a.opt.only, "only the points whose key contains one of these (e.g. model=resnet18)");
}

// The joule binary itself, for the child processes.
std::string self_exe() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) fail_internal("cannot find the joule binary (/proc/self/exe): " + ec.message());
  return p.string();
}
}  // namespace

Action add_experiment(CLI::App& app) {
  auto a = std::make_shared<ExperimentArgs>();
  app.require_subcommand(1);
  CLI::App* run = app.add_subcommand("run", "Run every point of an experiment not yet done (models x grid x steps)");
  add_store_dir(*run, *a);
  run->add_option("--executor", a->opt.executor, "local (child processes) or slurm (a job array through sbatch)")
      ->check(CLI::IsMember({"local", "slurm"}))
      ->capture_default_str();
  run->add_option("--jobs", a->opt.jobs,
                  "points at once, each in its own process (local: they then share the cores; slurm: above 1, the array's throttle)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  run->add_option("--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  run->add_flag("--quiet", a->quiet, "no progress on stderr");
  CLI::App* status = app.add_subcommand("status", "Points done, failed, running, interrupted and pending");
  add_store_dir(*status, *a);
  status->add_option("--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  CLI::App* point = app.add_subcommand("point", "Run one point in this process (what the executors start)");
  add_store_dir(*point, *a);
  point->add_option("--index", a->index, "the point's index (as `status --format json` lists them)")->required();
  point->add_flag("--quiet", a->quiet, "no progress on stderr");

  return [a, run, status, point] {
    const experiment::ExperimentSpec spec = experiment::read_experiment(a->file);
    if (run->parsed()) {
      a->opt.worker = self_exe();
      const auto r = experiment::run_experiment(spec, a->opt, terminal_hooks(a->quiet));
      end_status(a->quiet);
      if (a->format == "json") {
        fmt::print("{}\n", r.to_json().dump(2));
      } else {
        fmt::print("{}: {} points: {} done now ({} of them changed since they were done), {} already done, {} failed\n",
                   r.name, r.points, r.done + r.failed, r.changed, r.skipped, r.failed);
        for (const std::string& f : r.failures) fmt::print("  failed: {}\n", f);
        fmt::print("store {}\nruns  {}\n", r.store, r.dir);
      }
      return r.failed ? 3 : 0;
    }
    if (status->parsed()) {
      const auto r = experiment::experiment_status(spec, a->opt);
      if (a->format == "json") {
        fmt::print("{}\n", r.to_json().dump(2));
        return 0;
      }
      fmt::print("{}: {} points:", r.name, r.points);
      for (const auto& [k, n] : r.counts) fmt::print(" {} {}", k, n);
      fmt::print("\n");
      for (const auto& row : r.rows) {
        const std::string s = row["status"].get<std::string>();
        if (s == "done") continue;
        fmt::print("  {:<12} {}{}\n", s, row["point"].get<std::string>(),
                   row.contains("error") ? "  " + row["error"].get<std::string>() : "");
      }
      return 0;
    }
    const auto points = experiment::expand(spec);
    if (a->index >= points.size())
      fail(fmt::format("--index {}: the experiment has {} points (0..{})", a->index, points.size(), points.size() - 1));
    experiment::ResultsStore store(experiment::store_url(spec, a->opt));
    const auto r = experiment::run_point(spec, points[a->index], experiment::run_root(spec, a->opt), store,
                                         terminal_hooks(a->quiet));
    end_status(a->quiet);
    fmt::print("{}: {}{}\n", r.point, r.status, r.error.empty() ? "" : " (" + r.error + ")");
    return r.status == "done" ? 0 : 3;
  };
}

}  // namespace joule::cli
