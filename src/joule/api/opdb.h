#pragma once
// The operator cost database as workflows: measure the layers of models or a sweep config's
// grid into a store, look inside it, and predict what a model will cost from it (exact rows,
// a regressor trained on the store, or a roofline bound), with its coverage and a validation
// against measured latency.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "joule/api/hooks.h"
#include "joule/api/model.h"
#include "joule/api/prepare.h"
#include "joule/opdb/collect.h"
#include "joule/predict/predictor.h"
#include "joule/profile/profiler.h"

namespace joule::api {

struct OpdbOptions {
  std::string db;                // "" = opdb::Store::default_path()
  std::vector<int> threads = {1};
  int warmup = 3;
  int runs = 15;                 // samples per row, at least ...
  double sample_ms = 10;         // each the mean of the calls that fill this long
  double min_time_s = 0.05;      // ... and at least this long
  double noisy_cv = 0.02;        // rows above are re-measured (twice), then flagged noisy
  std::vector<std::string> regimes = {"reused", "fresh", "cold"};
  std::string energy = "estimate";  // none | auto | estimate | rapl | perf | nvml
  bool force = false;            // re-measure rows already in the store
  std::string passes = "default";
  AlgoOptions algo;
};

struct OpdbModelReport {
  std::string model, origin;
  int threads = 1;
  opdb::CollectStats stats;
};

struct OpdbReport {
  std::string db, config, stage, energy_source;
  size_t points = 0;                     // sweep points (0 for models)
  std::vector<OpdbModelReport> models;   // per model and thread count (one entry for a sweep)
  size_t rows = 0;                       // rows in the store afterwards
  double seconds = 0;
  nlohmann::json to_json() const;
};

// The name a model's rows are recorded under: "model:<name>", the name being the file's stem,
// or its folder's name when the stem is the generic "model".
std::string origin_of(const Model& m);

// Measures every distinct layer of each model (after `passes`) at each thread count.
OpdbReport opdb_add(const std::vector<Model>& models, const OpdbOptions& o = {}, const Hooks& hooks = {});
// Measures the points of a sweep config ("" = the shipped default) for `stage`.
OpdbReport opdb_sweep(const std::string& config, const std::string& stage, const OpdbOptions& o = {},
                      const Hooks& hooks = {});

// Appends the per-layer times a profile measured inside the model (`joule profile --opdb`) as
// rows of mode and regime "in-model", keyed as opdb_add keys them: the plan is compiled again
// as the profile compiled it, and a layer whose node is not at the same step is left out.
// The predictor reads the isolated regimes only; in-model rows are for comparing with them.
// Returns the rows written.
size_t opdb_record_profile(const Model& m, const profile::ProfileResult& r, const std::string& db,
                           const PrepareOptions& how, const runtime::TensorMap& inputs = {});

// Rows per op type, threads, regime, origin; noisy rows; CPUs and versions present.
nlohmann::json opdb_stats(const std::string& db);
// Every row as CSV (one line each, the store's columns).
std::string opdb_export_csv(const std::string& db);

struct PredictOptions {
  std::string db;                        // "" = default store
  int threads = 1;
  std::optional<int64_t> batch;          // dim 0 of every input
  std::string passes = "default", int8 = "real";
  AlgoOptions algo;
  predict::PredictorOptions predictor;
};

// A predictor over an existing store ("" = the default one; BadInput when there is none), for
// callers that predict many compiled sessions (search).
std::unique_ptr<predict::Predictor> open_predictor(const std::string& db, const predict::PredictorOptions& o = {});

// The model compiled as `joule run` would compile it (passes, algorithm choice), predicted
// layer by layer from the store.
predict::Prediction predict_model(const Model& m, const PredictOptions& o = {});

struct CoverageReport {
  predict::Prediction prediction;
  double exact_pct = 0;
  // Op types whose time is not on exact rows, largest first: what to sweep next.
  struct Gap {
    std::string op_type;
    double time_pct = 0;
    int layers = 0;
  };
  std::vector<Gap> gaps;
  std::vector<std::string> sweep_next;   // the fewest op types that lift exact coverage to >= 90 %
  nlohmann::json to_json() const;
};
CoverageReport opdb_coverage(const Model& m, const PredictOptions& o = {});

struct ValidationModel {
  std::string model;
  double predicted_ms = 0, measured_ms = 0, error_pct = 0;  // whole model (best round's median)
  std::vector<double> round_ms;                             // each round's median of plain runs
  double layer_sum_ms = 0;                                  // measured per-layer medians' sum
  double layer_median_abs_error_pct = 0;                    // per layer, predicted vs measured
  std::map<std::string, double> coverage_pct;
  std::vector<std::string> excluded_origins;
};
struct ValidationReport {
  std::vector<ValidationModel> models;
  double within_5_pct = 0, within_10_pct = 0;   // share of models
  double median_abs_error_pct = 0;
  bool leave_one_out = false;
  int rounds = 0;
  nlohmann::json to_json() const;
};
struct ValidateOptions {
  int runs = 20;            // timed runs per round, plain and instrumented ...
  double min_time_s = 1.0;  // ... and plain runs for at least this long
  int rounds = 3;           // measurement rounds, the models interleaved; the best round counts
  bool leave_one_out = false;  // each model predicted without the rows only its own layers put in the store
};
// Predicts and measures (joule's profiler: plain runs and per-layer) each model. A model's
// measured latency is the lowest of `rounds` medians, the rounds interleaved over the models
// (as the zoo takes the best of several processes): the time a model takes moves by 10-20 %
// between minutes on a shared machine, more than the error the prediction is judged by.
ValidationReport validate_predictions(const std::vector<Model>& models, const PredictOptions& o,
                                      const ValidateOptions& v = {}, const Hooks& hooks = {});

}  // namespace joule::api
