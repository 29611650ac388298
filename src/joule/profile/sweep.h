#pragma once
// Sweeps: the cartesian product of batch sizes, input sizes and thread counts, profiled point
// by point. Results go to DIR as they are measured: <model>_overall.csv and
// <model>_layers.csv get one point appended at a time (each file rewritten atomically), so
// an interrupted sweep loses nothing measured; rerunning skips points already in
// <model>_overall.csv (resume).
#include <functional>
#include <string>
#include <vector>

#include "joule/profile/profiler.h"

namespace joule::profile {

struct SweepSpec {
  std::vector<int64_t> batches;      // empty: the model's own batch
  std::vector<int64_t> input_sizes;  // empty: the model's own size (NCHW inputs: H = W = size)
  std::vector<int> threads;          // empty: ProfileOptions::threads
  std::vector<std::string> algos;    // --algo values, one point each ("conv=winograd", "auto"); empty: base
};

struct SweepPoint {
  int64_t batch = -1;       // -1: model's own
  int64_t input_size = -1;  // -1: model's own
  int threads = 0;
  std::string algo;         // "": the base options' algorithms
};

// --stage presets: sanity = 1 point (3 runs), quick = 10 points (batch 1..16 x threads
// {1, all}, 10 runs), full = batch 1..128 (12 sizes) x every thread count (30 runs).
// Lists the user gave explicitly are kept; runs/warmup only change when not given.
void apply_stage(const std::string& stage, SweepSpec& spec, ProfileOptions& opt, bool runs_given,
                 bool warmup_given);

std::vector<SweepPoint> sweep_points(const SweepSpec& spec, int default_threads);

// Session input-shape overrides for a point (batch on dim 0 of every input with a shape,
// size on dims 2 and 3 of 4-D inputs). Throws BadInput when the model has no NCHW input
// for --input-size.
std::map<std::string, Shape> input_shapes_for(const ir::Graph& g, const SweepPoint& p);

struct SweepProgress {
  size_t done = 0, total = 0, skipped = 0;
  double elapsed_s = 0, eta_s = -1;  // eta < 0: unknown yet
};

struct SweepOutcome {
  std::vector<ProfileResult> measured;
  std::vector<PointKey> skipped;  // already in <model>_overall.csv
};

// Profiles every point. out_dir empty: nothing written. resume: append to existing CSVs and
// skip finished points; otherwise the CSVs are started afresh. `inputs` only without
// batch/size overrides.
SweepOutcome run_sweep(const ir::Graph& g, const SweepSpec& spec, const ProfileOptions& base,
                       const std::string& out_dir, bool resume, const runtime::TensorMap* inputs = nullptr,
                       const std::function<void(const SweepProgress&)>& progress = {});

}  // namespace joule::profile
