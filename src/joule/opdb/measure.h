#pragma once
// Measuring one operator in isolation: the node cut out of its graph as a one-node graph
// (its constants kept, its other inputs made graph inputs), compiled by the engine with the
// algorithm asked for and timed with the profiler's statistics, in three cache regimes:
//   reused - the same input tensors every run (caches warm);
//   fresh  - a rotating set of input copies larger than the last-level cache (inputs cold);
//   cold   - the caches flushed before every call, then the inputs read once: the weights
//            (constant inputs) come from memory, the activations from cache -- a layer inside
//            a model whose weights do not fit in the last-level cache. Only for nodes with
//            constant inputs (for the others it is the reused regime).
// Per-layer times inside a model fall between these.
#include <functional>
#include <string>
#include <vector>

#include "joule/ir/graph.h"
#include "joule/opdb/store.h"

namespace joule::profile::energy {
class EnergyMeter;
}

namespace joule::opdb {

struct MeasureOptions {
  int threads = 1;
  int warmup = 3;
  int runs = 15;              // samples, at least ...
  double sample_ms = 10;      // each the mean of as many calls as fill this long (at least one)
  double min_time_s = 0.05;   // ... and at least this long
  double noisy_cv = 0.02;     // a row above this CV is flagged noisy (reused: after the retries)
  int retries = 2;            // re-measurements of a noisy reused row (the lowest median is kept)
  std::vector<std::string> regimes = {"reused", "fresh", "cold"};
  // Energy per call: a sensor is read over a loop of calls at least its window long; an
  // estimator models it from the measured time, FLOPs and bytes. Null: no energy.
  profile::energy::EnergyMeter* meter = nullptr;
  std::function<void()> checkpoint;  // called between measurements; may throw to stop
};

// The key of node `n` of `g` (g.types must hold its input and output types).
OpKey op_key(const ir::Graph& g, const ir::Node& n);
// fp32, bf16 or int8: the narrowest float/integer type among the node's inputs and outputs, or
// bf16 when the algorithm computes in it (onednn_bf16 on float32 tensors).
std::string precision_of(const OpKey& k, const std::string& algorithm);

// Whether `regime` is measured for node `n` (cold: only for nodes with constant inputs).
// BadInput for an unknown regime.
bool regime_applies(const std::string& regime, const ir::Graph& g, const ir::Node& n);

// Node `n` of `g` as a one-node graph (named "op").
ir::Graph isolate(const ir::Graph& g, const ir::Node& n);

// Measures `n` on `algorithm` ("" = the engine's own choice) in each regime of `o` that
// applies to it. `inputs`:
// the node's non-constant inputs in order (real tensors captured from a model run); empty:
// seeded random values (floats normal, integers zero). One Row per regime, with the key,
// statistics, FLOPs, bytes and energy filled; origins left to the caller.
std::vector<Row> measure_node(const ir::Graph& g, const ir::Node& n, const std::string& algorithm,
                              const MeasureOptions& o, const std::vector<Tensor>& inputs = {});

}  // namespace joule::opdb
