#pragma once
// Whole-model latency and energy predicted from the operator store, layer by layer over the
// plan a session compiled (so the passes' fusions and the algorithm chosen per node are what
// is predicted). For each step, in this order:
//   exact    - the store has the node's key on its algorithm, threads, precision and CPU;
//   model    - a gradient-boosted-trees regressor (XGBoost) trained on the store's rows of the
//              node's op family (convolutions, matrix products...: at least `min_rows` of them;
//              else on every row of the store), features from predict/features.h; it learns
//              the ratio of the measured time to a roofline time plus a dispatch's cost, so
//              that a layer outside its rows' sizes scales with its FLOPs and bytes;
//   roofline - max(FLOPs / measured FP32 peak, bytes / measured bandwidth), a lower bound.
// Each layer says which, and a layer from a regressor how wrong that regressor was on the rows
// it did not learn from (4 folds by origin: out-of-fold median and 90th-percentile errors).
// Inside a model a layer's input was just written by the layer before it (warm), while its
// weights stay in cache only when the model's weights fit in the last-level cache. `regime`
// auto (the default) takes each layer's time with warm caches (reused) plus, scaled by the
// share of the model's weights the cache cannot hold (cold_share), what cold weights add
// (cold - reused), bounded by twice the time to read the layer's weights at the measured
// bandwidth (the cold regime flushes more than the weights: TLB, output lines). reused, fresh, cold or mid (the geometric mean of reused and fresh)
// take one regime for every layer. A node without weights has no cold row; nor has a store
// filled before the cold regime existed: the reused time stands for it.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "joule/opdb/store.h"
#include "joule/runtime/session.h"

namespace joule::predict {

struct LayerPrediction {
  size_t step = 0;
  std::string name, op_type, algorithm;
  std::string source;  // exact | model | roofline
  double latency_ms = 0, flops = 0, bytes = 0;
  double weight_bytes = 0;  // of its constant inputs
  std::optional<double> energy_j;
  std::string energy_source;
  // source model: the regressor's median and 90th-percentile relative error on rows it did not
  // learn from (out-of-fold, the folds by origin: a model's layers all in one), in percent.
  std::optional<double> error_p50_pct, error_p90_pct;
};

struct Prediction {
  std::string model, cpu, isa, precision, regime, store;
  int threads = 1;
  double weight_bytes = 0;  // constants the plan reads, each once
  double cold_share = 0;    // regime auto: weight of the cold regime in every layer's time
  double latency_ms = 0;  // sum of the layers
  std::optional<double> energy_j;
  std::string energy_source;  // one source, or "mixed: ..." listing them
  std::vector<LayerPrediction> layers;  // execution order
  // Share of the predicted time and number of layers per source (exact, model, roofline).
  std::map<std::string, double> coverage_pct;
  std::map<std::string, int> coverage_layers;
  // Op type predicted by a regressor -> the rows that regressor learned from (its family's, or
  // the whole store's).
  std::map<std::string, int> training_rows;
  // How sure: the regressor's out-of-fold median error over the layers it predicts, weighted
  // by their time, as a share of the whole prediction (exact rows count 0: they are
  // measurements, with their own noise); nullopt when no layer came from a regressor.
  std::optional<double> expected_error_pct;
  nlohmann::json to_json() const;
  // "exact rows 46.0% (38 layers), regressor 54.0% (43), roofline bound 0.0% (0)"
  std::string coverage_text() const;
};

struct PredictorOptions {
  std::string regime = "auto";  // auto | reused | fresh | cold | mid
  std::vector<std::string> exclude_origins;  // leave-one-out: hide rows only these origins made
  int min_rows = 8;            // fewer rows of a family: the store-wide regressor; of the store: roofline
  double llc_bytes = 0;        // regime auto: the last-level cache (0: this machine's)
};

// The share of a model's weights that the last-level cache cannot keep from one run to the
// next: 0 while they take at most a quarter of it (activations, code and the other cores
// need the rest), rising to 1 at three quarters. Fitted on the zoo's 19 models (BENCHMARKS.md).
double cold_share(double weight_bytes, double llc_bytes);

class Predictor {
 public:
  // Reads the store's rows for this CPU, ISA and joule version once.
  Predictor(const opdb::Store& db, PredictorOptions o = {});
  ~Predictor();
  Prediction predict(const runtime::Session& s, const std::string& model_name);
  size_t rows() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace joule::predict
