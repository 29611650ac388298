#pragma once
// The operator cost database: one SQLite file (default ~/.cache/joule/opdb.sqlite), one row per
// measured operator instance. A row is keyed by what makes its cost: the node (op type,
// attributes, input types, which inputs are constants), the algorithm that ran it, threads,
// precision, the cache regime it was measured in, the CPU (model and ISA) and the joule version.
// Its values are the profiler's statistics, FLOPs, bytes and energy with its source. Rows also
// record where they came from ("sweep", "model:resnet50", "profile:resnet50"), many origins per
// row, so that a store can be used without one architecture's own layers (leave-one-out).
//
// The schema is versioned (PRAGMA user_version) and migrated on open; every write is its own
// transaction (or the caller's, through Transaction), so a killed sweep loses no finished row.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "joule/core/sqlite.h"

namespace joule::opdb {

// What identifies an operator instance independently of the model it is in.
struct OpKey {
  std::string op_type;              // "Conv", "joule.Conv" (domain-qualified outside ai.onnx)
  nlohmann::json attrs = nlohmann::json::object();  // name -> attribute text, sorted
  std::vector<std::string> inputs;  // type strings; constants prefixed "const " ("" absent optional)
  std::vector<std::string> outputs; // type strings (not part of the key: they follow from the inputs)
  std::string text() const;         // canonical JSON of op, attrs and inputs
};

struct Row {
  OpKey op;
  std::string algorithm;            // the kernel that ran ("reference" = the scalar oracle)
  int threads = 1;
  std::string precision = "fp32";   // fp32 | bf16 | int8
  std::string regime = "reused";    // reused (warm) | fresh (rotating inputs > LLC) | cold (caches flushed, inputs read)
  std::string cpu, isa, joule_version;
  // Statistics of the per-call time (ms), as profile::Stats computes them.
  double median_ms = 0, trimmed_mean_ms = 0, std_ms = 0, cv = 0;
  int runs = 0;
  bool noisy = false;
  double flops = 0, bytes = 0;
  std::optional<double> energy_j;   // per call
  std::string energy_source;        // "rapl", "estimate:<profile>", ... ("" when none)
  std::string mode = "isolated";    // isolated: a one-node graph (the only mode written so far)
  std::string timestamp;            // ISO 8601 UTC; filled by put() when empty
  std::vector<std::string> origins; // where the row came from (merged on put)
};

// Which rows a query sees. Empty strings / 0 match anything.
struct Filter {
  std::string cpu, isa, joule_version, op_type, regime, precision;
  int threads = 0;
  // Leave-one-out: rows whose every origin is in this list are hidden.
  std::vector<std::string> exclude_origins;
};

class Store {
 public:
  static constexpr int kSchemaVersion = 1;
  // Opens (creating the file and its folder, migrating an older schema). BadInput with the path
  // when the file is not a joule store or is newer than this joule.
  explicit Store(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // $JOULE_OPDB or ~/.cache/joule/opdb.sqlite
  static std::string default_path();
  const std::string& path() const { return path_; }

  // Inserts or replaces the row with the same key; its origins are added to those it had.
  void put(const Row& r);
  // Adds an origin to an existing row (a model that contains an already measured layer).
  void add_origin(const Row& key, const std::string& origin);
  std::optional<Row> find(const OpKey& op, const std::string& algorithm, int threads, const std::string& precision,
                          const std::string& regime, const std::string& cpu, const std::string& isa,
                          const std::string& joule_version) const;
  std::vector<Row> rows(const Filter& f = {}) const;
  size_t count() const;

  // BEGIN ... COMMIT around many puts (faster; a kill loses only the open batch).
  class Transaction {
   public:
    explicit Transaction(Store& s);  // rolls back unless committed
    void commit();

   private:
    SqliteDb::Transaction t_;
  };

 private:
  std::string path_;
  std::unique_ptr<SqliteDb> db_;
};

// The CPU identity rows are keyed by: cpu_features().model and .isa.
std::string this_cpu();
std::string this_isa();
using joule::now_iso8601;

}  // namespace joule::opdb
