#pragma once
// The profiler: whole-model latency from plain runs (no observers), per-layer latency from
// separate instrumented runs (a timing observer), the observer overhead between the two,
// per-layer FLOP/s against this CPU's peak, an op-type summary, optional energy (whole model
// and per layer by replay), and the machine outputs (JSON, CSV, Chrome trace). The console
// table is printed from the same ProfileResult.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "joule/ir/graph.h"
#include "joule/kernels/select.h"
#include "joule/profile/cpu_peak.h"
#include "joule/profile/energy/energy_meter.h"
#include "joule/profile/stats.h"
#include "joule/runtime/session.h"

namespace joule::profile {

struct ProfileOptions {
  std::string model_name = "model";
  int threads = 0;                 // 0: all cores
  int warmup = 5;                  // untimed runs ...
  double warmup_time_s = 0;        // ... or, when > 0, untimed runs for this long
  int runs = 30;                   // timed runs of each kind (plain and instrumented) ...
  double min_time_s = 0;           // ... and at least this long in plain runs
  double noisy_cv = 0.05;
  double coverage = 0.9;           // op types covering this share of the time
  std::string energy = "none";     // none | auto | rapl | perf | nvml | estimate
  energy::MeterConfig meter;
  bool layer_energy = true;        // replay layers under the sensor
  std::map<std::string, Shape> input_shapes;  // session input shape overrides
  // Graph passes applied before compiling, at the point's input shapes (so constant folding
  // never pins a batch size or input size the sweep then changes). Empty: none.
  std::vector<std::string> passes;
  kernels::AlgoSpec algo;          // algorithm per node (default: guess)
  int device = -1;                 // -1 CPU; N: CUDA GPU N (runtime::SessionOptions::device)
  std::string gpu_math = "fp32";   // fp32 | tf32 | fp16 | bf16 on the GPU
  std::vector<std::string> gpu_fp32{};  // nodes kept float32 under fp16 | bf16
  std::string algo_label;          // the --algo value a sweep point used; names the point's
                                   // algorithm column instead of the per-node summary
  uint32_t seed = 0;
  // Called before every run (warm-up, timed, energy); may throw to stop (cancellation).
  std::function<void()> checkpoint;
  // One run after the warm-up with a runtime::NumericsObserver (NaN and Inf per node's outputs,
  // the first node that has any), outside the timed runs.
  bool check_numerics = false;
};

struct LayerResult {
  size_t step = 0;
  std::string name, op, algorithm;
  std::vector<std::string> inputs, outputs;  // type strings "float32[1,8,28,28]"
  bool has_cost = false;
  double flops = 0, bytes = 0;
  Stats ms;
  double pct = 0, cum_pct = 0;  // of the sum of per-layer medians
  double gflops = 0, pct_peak = 0;
  std::optional<double> energy_j;  // per call
  bool on_gpu = false;             // ran on a GPU (timed by CUDA events; no CPU peak share)
  int energy_iterations = 0;       // replay iterations under the sensor (0: modelled)
};

// A node inside a control-flow body (If/Loop/Scan/SequenceMap), its time summed over the
// body's runs in one inference (the mean over the instrumented runs). Its owner's row in
// `layers` already contains this time.
struct BodyNodeResult {
  std::string owner, attribute, name, op, algorithm;
  double calls = 0;          // per inference
  double ms = 0;             // per inference
  double pct_of_owner = 0;   // of the owner's median time
};
// A graph attribute of a control-flow node: how often it ran per inference (Loop iterations,
// Scan steps, the If branch taken) and, when it ran on the reference interpreter, why.
struct BodyResult {
  std::string owner, op, attribute, fallback;
  double runs = 0;  // per inference
};
struct OpTypeResult {
  std::string op;
  int count = 0;
  double ms = 0, pct = 0, cum_pct = 0, flops = 0;
};

struct EnergyResult {
  std::string source, description;
  std::vector<std::string> selection;  // why this meter (auto) or what was asked
  double joules_per_inference = 0;     // total, idle included
  double dynamic_joules_per_inference = 0;  // idle subtracted (= total when idle unknown)
  double power_mean_w = 0;
  double seconds = 0;
  int iterations = 0;
  std::optional<double> idle_power_w;
  std::string note;
  std::optional<double> layer_sum_j, attribution_pct;
  // Measured by a sensor: the per-layer replays' energies with idle power left in, over the
  // whole model's total (no idle estimate in either: the idle figure, read while the device is
  // still clocked up after the timed runs, moves the dynamic ratio by tens of percent on a GPU).
  std::optional<double> layer_sum_total_j, attribution_total_pct;
  double window_s = 0;
  std::vector<energy::Sample> samples;  // whole-model window
};

struct ProfileResult {
  std::string model, algorithm;
  std::string input_shape;         // first input, e.g. "[1,1,28,28]"
  std::string input_size;          // spatial size for NCHW inputs ("28", "28x32"), else "-"
  int64_t batch = 0;
  int threads = 0;
  int warmup_runs = 0;
  std::vector<double> plain_samples_ms, instrumented_samples_ms;
  Stats plain_ms, instrumented_ms;
  double overhead_pct = 0;
  std::vector<LayerResult> layers;  // sorted by median time, largest first
  std::vector<BodyResult> bodies;
  std::vector<BodyNodeResult> body_nodes;  // largest first
  std::vector<OpTypeResult> op_types;
  double coverage = 0.9;
  int op_types_for_coverage = 0;
  double layer_sum_ms = 0, attribution_pct = 0;
  double total_flops = 0, total_bytes = 0;
  CpuPeak peak;
  double peak_gflops = 0;
  std::optional<EnergyResult> energy;
  nlohmann::json trace;             // Chrome trace of one instrumented run
  nlohmann::json numerics;          // check_numerics: NumericsObserver::to_json(); else null
  std::string numerics_summary;     // check_numerics: one line
};

// Profiles one configuration. `inputs` null: seeded random inputs at the session's shapes.
ProfileResult profile_model(const ir::Graph& graph, const ProfileOptions& opt,
                            const runtime::TensorMap* inputs = nullptr);

// What identifies a measured configuration in <model>_overall.csv (its first five columns);
// computed without running the model (the session is built, shapes inferred).
struct PointKey {
  std::string model, algorithm, input_size;
  int64_t batch = 0;
  int threads = 0;
  std::vector<std::string> fields() const;
};
PointKey point_key(const ir::Graph& graph, const ProfileOptions& opt);

nlohmann::json to_json(const ProfileResult& r);
std::vector<std::string> overall_csv_columns();
std::vector<std::string> overall_csv_row(const ProfileResult& r);
std::vector<std::string> layers_csv_columns();
std::vector<std::vector<std::string>> layers_csv_rows(const ProfileResult& r);
// Console report: header, per-layer table (top K; 0 = all), op types, attribution, energy.
std::string format_report(const ProfileResult& r, size_t top);

// CSV helpers (RFC 4180 quoting).
std::string csv_line(const std::vector<std::string>& fields);
std::vector<std::vector<std::string>> parse_csv(const std::string& text);

}  // namespace joule::profile
