#pragma once
// Multi-objective search over per-layer precision, structured pruning ratio and QAT on/off
// (search/space.h), every trial built, compiled and measured on the engine: the model pruned
// (prune/, optionally fine-tuned), quantized (calibrated QDQ, or trained by QAT; run on the
// integer kernels), bf16 layers on oneDNN's bf16 kernels; accuracy
// on validation data (top-1 with labels, else the output's SQNR against FP32); latency and
// energy measured (median of timed runs; energy from a sensor or the named estimator) or
// predicted from the operator database, in which case the front is measured again at the end.
// Every trial is appended to OUT/trials.jsonl (a search started again with the same space,
// model and options resumes: known trials are not run again) and, with a store, to the results
// store. The front (non-dominated feasible trials over the objectives) goes to front.csv,
// front.json and front.svg with the FP32 and uniform-W8A8 baselines marked; each front point's
// quant.yaml / prune.yaml / algo.yaml reproduce it with joule quantize / prune / --algo-file (a QAT
// point: qat.txt, the joule qat command).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "joule/api/data.h"
#include "joule/api/hooks.h"
#include "joule/api/model.h"

namespace joule::api {

struct SearchOptions {
  std::string space;                  // the space: a YAML file or YAML text (search/space.h)
  DataSource data;                    // calibration samples (needed when a layer may be quantized)
  size_t calib_samples = 32;
  DataSource train;                   // labelled training data: the space's finetune and qat
  DataSource val;                     // validation samples: labelled -> top-1 %, else SQNR dB vs FP32
  size_t val_samples = 256;           // the first N (0: all)
  DataOptions preprocess;
  std::vector<std::string> objectives{"accuracy", "latency"};  // of accuracy, latency, energy, size
  std::string cost = "measured";      // measured | predicted (operator database)
  std::string opdb;                   // predicted: the store ("" default)
  std::string algorithm = "nsga2";    // nsga2 | moead | random
  size_t trials = 100;                // distinct configurations measured (baselines included)
  size_t population = 0;              // 0: from trials
  uint32_t seed = 1;
  int threads = 1;                    // the engine's threads for every trial
  int warmup = 3, runs = 20;          // measured cost: untimed and timed runs per trial
  double min_time_s = 0.1;            // measured cost: keep timing until the timed runs took this long
  std::string energy = "auto";        // measured cost: auto | rapl | perf | nvml | estimate
  std::string out_dir;                // required
  std::string store;                  // results store URL ("" none)
  std::string name;                   // the search's name in the store (default "search:<model>")
  std::vector<size_t> export_points;  // front ranks (0-based, front.csv order) written as ONNX with evidence
};

struct Trial {
  size_t index = 0;
  std::string key;                    // the genome, compact ("fp32"/"w8a8" for baselines outside the space)
  std::vector<int> genome;            // empty for a baseline outside the space
  std::map<std::string, std::string> precision;  // layer -> choice
  std::map<std::string, double> prune;           // layer -> ratio (ratios > 0)
  bool qat = false;                              // trained with QAT (the space's qat block)
  double accuracy = 0, latency_ms = 0, size_mb = 0;
  std::optional<double> energy_mj;
  double params = 0, flops = 0;
  std::string cost;                   // measured | predicted
  std::string energy_source;
  bool feasible = true;
  std::string violates;               // which constraints ("" none)
  std::string error;                  // the trial could not be built or run (then infeasible)
  double seconds = 0;                 // wall time of the trial
  bool resumed = false;               // read back from trials.jsonl
  std::optional<double> measured_latency_ms;  // predicted cost: the front point measured again
  std::optional<double> measured_energy_mj;
  nlohmann::json to_json() const;
  static Trial from_json(const nlohmann::json& j);
};

struct SearchReport {
  std::string model, metric;          // metric: top1 (%) or sqnr_db
  std::vector<Trial> trials;          // in order of evaluation
  std::vector<size_t> front;          // indices into trials, by accuracy (best first)
  Trial fp32, w8a8;                   // the baselines
  std::vector<size_t> dominating_w8a8;  // front points at least as accurate as W8A8 and strictly cheaper
  double search_s = 0, remeasure_s = 0;
  nlohmann::json json;                // search.json
  std::string table;                  // the front, for people
  std::string svg;                    // front.svg
  nlohmann::json to_json() const { return json; }
};

SearchReport search(const Model& m, const SearchOptions& o, const Hooks& hooks = {});

}  // namespace joule::api
