#pragma once
// Filling the store: every distinct node of a compiled session measured in isolation (on the
// algorithm the session chose for it, with the real tensors it received in one run of the
// model), and the operator sweeps: grids of shapes per op type from a YAML config, each
// point a small graph compiled through the same passes as a model, so that the rows have the
// keys the fused nodes of real models have.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "joule/opdb/measure.h"
#include "joule/runtime/session.h"

namespace joule::opdb {

struct CollectOptions {
  MeasureOptions measure;
  std::string origin;   // "model:resnet50", "sweep"
  bool force = false;   // re-measure rows the store already has
};

struct CollectStats {
  size_t steps = 0;      // nodes in the plan
  size_t distinct = 0;   // distinct keys among them
  size_t measured = 0;   // distinct keys measured now
  size_t known = 0;      // distinct keys already in the store (origin added)
  std::vector<std::string> skipped;  // "node (op): why" for nodes that cannot be measured alone
  void add(const CollectStats& o);
};

// Measures the distinct nodes of `s` into `db` (one transaction per node). `inputs`: the
// model's inputs for the capturing run (null: seeded random). `progress(done, total, what)`.
CollectStats collect_session(runtime::Session& s, Store& db, const CollectOptions& o,
                             const runtime::TensorMap* inputs = nullptr,
                             const std::function<void(size_t, size_t, const std::string&)>& progress = {});

// One entry of a sweep config: an op type and a grid of parameter values (every combination
// is a point).
struct SweepEntry {
  std::string op;
  std::map<std::string, std::vector<std::string>> grid;
  int line = 0;  // in the config file, for messages
};

struct SweepConfig {
  std::string path;
  std::map<std::string, std::vector<SweepEntry>> stages;  // quick, full (full adds to quick)
  double max_gflop = 4;  // points above this many GFLOP are left out
};

// Reads a sweep config (BadInput naming the file, line and key when malformed).
SweepConfig load_sweep_config(const std::string& path);
// The shipped default grid (examples/opdb/default.yaml beside the models folder, else built in).
std::string default_sweep_config_path();

struct SweepCase {
  std::string label;  // "Conv channels=64 size=56 kernel=3 ..."
  ir::Graph graph;    // ONNX-level graph of the point, passes not applied
};
// The points of `stage`: sanity = the first point of every quick entry; quick; full = quick
// and full entries. BadInput for an unknown op or parameter.
std::vector<SweepCase> sweep_cases(const SweepConfig& c, const std::string& stage);

}  // namespace joule::opdb
