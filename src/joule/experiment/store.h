#pragma once
// The results store: every run joule keeps — each point of an experiment, and any command run
// with --store — as one row with its parameters, its full result (each step's JSON, as
// `--format json` prints it), flat metrics for tables and plots, and per-layer times when a step
// profiled. An SQLite file, or a PostgreSQL database when many machines write to one place; one
// schema for both, versioned and migrated on open. Many processes may write at once (each write
// is a transaction). A run is keyed by (experiment, point): running a point again updates its row, so no
// point is ever stored twice.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>


namespace joule::experiment {

class SqlBackend;

struct LayerRow {
  std::string name, op, algorithm;
  double ms = 0, pct = 0;  // median time per call; share of the layers' sum
};

struct RunRow {
  int64_t id = 0;
  std::string experiment;  // "" for a command run outside an experiment
  std::string point;       // unique within the experiment ("model=resnet18 config=w8a8 threads=1")
  std::string command;     // the steps run: "bench", "quantize+bench+eval"
  std::string config_hash; // experiments: Point::config_hash() of what ran
  std::string model;       // the model's name
  nlohmann::json params = nlohmann::json::object();  // grid labels (experiments) or the options (commands)
  std::string status = "running";                    // running | done | failed
  std::string error;                                 // failed: why (one line)
  nlohmann::json result = nlohmann::json::object();  // step name -> its JSON result
  std::map<std::string, double> metrics;             // "bench.latency_ms" -> 0.216, "eval.top1" -> 0.9
  std::vector<LayerRow> layers;                      // from the last step that profiled per layer
  std::string run_dir;                               // where the run's files are ("" none)
  std::string joule_version, cpu, isa, host;
  int64_t pid = 0;                                   // the process that ran (or runs) it
  int attempts = 0;
  std::string started, finished;                     // ISO 8601 UTC
  double wall_s = 0;
  nlohmann::json to_json() const;  // everything above (layers included)
};

struct ExperimentRow {
  std::string name, dir, spec, created, updated;  // spec: the experiment file's text
  size_t points = 0;                               // points the experiment has
  size_t done = 0, failed = 0, running = 0;        // rows by status
  nlohmann::json to_json() const;
};

// Which runs a query returns ("" / 0: any).
struct RunFilter {
  std::string experiment, status, model;
  bool any_experiment = true;  // false: only rows whose experiment equals `experiment` ("" = commands)
  bool with_layers = false;
};

class ResultsStore {
 public:
  static constexpr int kSchemaVersion = 1;
  // URL: a file path (or sqlite:PATH, sqlite://PATH), or postgresql://[user[:password]@]host[:port]/db
  // (libpq's URI: ?host=/socket/dir and the like work too).
  explicit ResultsStore(const std::string& url);
  ~ResultsStore();
  ResultsStore(ResultsStore&&) noexcept;
  const std::string& path() const;  // the file, or the URL without its password
  bool postgres() const;

  void put_experiment(const std::string& name, const std::string& dir, const std::string& spec, size_t points);
  std::vector<ExperimentRow> experiments() const;
  std::optional<ExperimentRow> experiment(const std::string& name) const;

  // Marks (experiment, point) running (inserting it, or counting one more attempt); returns its id.
  int64_t begin(RunRow& r);
  // Writes a finished (done or failed) run: its row, metrics and layers, in one transaction.
  // Inserts it when begin() was not called (r.id == 0).
  void finish(RunRow& r);
  std::vector<RunRow> runs(const RunFilter& f = {}) const;
  size_t count(const RunFilter& f = {}) const;  // how many runs() would return
  std::optional<RunRow> run(int64_t id, bool with_layers = true) const;
  std::optional<RunRow> find(const std::string& experiment, const std::string& point) const;  // without layers
  // point -> {status, config_hash} of an experiment's rows.
  std::map<std::string, std::pair<std::string, std::string>> statuses(const std::string& experiment) const;

 private:
  std::unique_ptr<SqlBackend> db_;
};

// The machine and build a run is recorded with: joule version, CPU model, ISA, host name.
void stamp(RunRow& r);

}  // namespace joule::experiment
