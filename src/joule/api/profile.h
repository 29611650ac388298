#pragma once
// Per-layer profiling, one configuration or a sweep (batch sizes x input sizes x thread counts
// x algorithm choices), with energy when asked; results written point by point to out_dir.
#include <optional>
#include <string>
#include <vector>

#include "joule/api/hooks.h"
#include "joule/api/prepare.h"
#include "joule/profile/sweep.h"

namespace joule::api {

struct ProfileOptions {
  std::vector<int> threads;              // one count, or several to sweep; empty: every core
  std::optional<int> warmup, runs;       // default 5 and 30, or the stage's
  double warmup_time_s = 0;              // untimed runs for this long instead of `warmup`
  double min_time_s = 0;                 // keep running until the plain runs took this long
  double coverage = 0.9;                 // report the op types covering this share of time
  std::string energy = "none";           // none | auto | rapl | perf | nvml | estimate
  std::string energy_profile;            // estimator device profile JSON ("" built in)
  double energy_window_s = 0;            // 0: the sensor's own window
  std::string powercap_root;             // "" = /sys/class/powercap
  bool layer_energy = true;              // replay each layer under the sensor
  std::vector<int64_t> batches, input_sizes;
  std::string stage;                     // "", sanity, quick, full
  std::string passes = "default", int8 = "real";
  std::string precision = "fp32";        // fp32 | bf16 (api/precision.h)
  double bf16_min_sqnr_db = 30;          // bf16: the ladder's threshold, checked on the inputs (0: none)
  AlgoOptions algo;
  std::string device = "cpu";            // cpu | cuda | cuda:N
  std::string gpu_math = "fp32";         // fp32 | tf32 | fp16 | bf16 (runtime::lower_gpu_floats)
  std::vector<std::string> gpu_fp32{};     // GPU nodes kept float32 under fp16 | bf16
  std::vector<std::string> algo_sweep;   // one point per --algo value
  std::string out_dir;                   // "" writes nothing; else CSVs, profile.json, trace.json (resumable)
  runtime::TensorMap inputs;             // empty: seeded random inputs
  std::string opdb;                      // "" none; else append the layers' times as in-model rows (one configuration)
  bool check_numerics = false;           // one extra run per point counting NaN/Inf per node (profile::ProfileOptions)
};

struct ProfileReport {
  std::string model;  // the name used in file names
  std::vector<profile::ProfileResult> points;  // measured in this call
  std::vector<profile::PointKey> skipped;      // already in out_dir's results
  bool sweep = false;  // more than one point asked for (or a stage)
  size_t opdb_rows = 0;  // in-model rows written to ProfileOptions::opdb
  PrecisionReport precision;  // bf16: the ladder's choice, made once at the given shapes
  nlohmann::json to_json() const;  // what `joule profile --format json` prints
};

ProfileReport profile(const Model& m, const ProfileOptions& o = {}, const Hooks& hooks = {});

}  // namespace joule::api
