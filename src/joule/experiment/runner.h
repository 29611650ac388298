#pragma once
// Running an experiment: every point not yet done in the store, each in its own folder
// (config.json: the point and the experiment file's text; env.json: joule version and build,
// CPU, host, the inputs' checksums; log.txt; result.json), recorded in the results store when
// it starts (running) and when it ends (done or failed). A point is done only once its row says
// so: an experiment killed at any moment loses no finished point, and running it again runs
// the rest (a failed or interrupted point again, a done one never).
//
// Executors: "local" runs the points on this machine, each in a child process of `worker` (the
// joule binary: `joule experiment point`), `jobs` at a time; with no worker, one after another
// in this process. A crashed point is then recorded as failed with the signal that ended it.
// "slurm" submits the points as one job array (sbatch; resources from the file's `slurm:` map;
// `jobs` above 1 throttles the array) whose tasks write to the store (PostgreSQL, or an SQLite file on a
// shared file system), waits for it to leave the queue, submits again the tasks that ended
// without recording their point (slurm.retries, default 1), and records the rest as failed.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "joule/api/hooks.h"
#include "joule/experiment/spec.h"
#include "joule/experiment/store.h"

namespace joule::experiment {

struct ExperimentOptions {
  std::string store;              // results store URL; "" = <dir>/results.sqlite
  std::string dir;                // run folders; "" = the experiment's dir (default runs/NAME)
  std::string executor = "local"; // local | slurm
  int jobs = 1;                   // points at once (local, with a worker)
  std::string worker;             // the joule binary for child processes; "" = in this process
  std::vector<std::string> only;  // run only the points whose key contains one of these ("" all)
};

// The store URL and run folder an experiment uses under `o` (defaults filled in).
std::string store_url(const ExperimentSpec& spec, const ExperimentOptions& o);
std::string run_root(const ExperimentSpec& spec, const ExperimentOptions& o);

struct ExperimentReport {
  std::string name, store, dir;
  size_t points = 0;   // in the experiment
  size_t skipped = 0;  // already done before this call (with the same config_hash)
  size_t changed = 0;  // done before, but the experiment file changed what they run: run again
  size_t done = 0, failed = 0;  // in this call
  std::vector<std::string> failures;  // "point: error"
  nlohmann::json to_json() const;
};

ExperimentReport run_experiment(const ExperimentSpec& spec, const ExperimentOptions& o, const api::Hooks& hooks = {});

// One point, in this process: its folder, its steps, its store row (returned).
RunRow run_point(const ExperimentSpec& spec, const Point& p, const std::string& root, ResultsStore& store,
                 const api::Hooks& hooks = {});

// A command's result recorded as a done run outside any experiment (`--store` on bench, profile,
// eval, quantize, sensitivity, compare, predict): its metrics and layers as a step's. Returns the
// row. `params`: what it was run with (the CLI: its command line).
RunRow record_command(const std::string& store, const std::string& command, const std::string& model,
                      const nlohmann::json& params, const nlohmann::json& result);

// Points by status: done, failed, running (its process alive), interrupted (a running row whose
// process is gone), changed (done, but the file now asks for something else), pending (no row).
struct StatusReport {
  std::string name, store;
  size_t points = 0;
  std::map<std::string, size_t> counts;
  std::vector<nlohmann::json> rows;  // {point, status, wall_s, error}
  nlohmann::json to_json() const;
};
StatusReport experiment_status(const ExperimentSpec& spec, const ExperimentOptions& o);

}  // namespace joule::experiment
