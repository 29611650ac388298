#pragma once
// Whole-model latency and energy predicted from the operator store, layer by layer over the
// plan a session compiled (so the passes' fusions and the algorithm chosen per node are what
// is predicted). For each step, in this order:
//   exact    - the store has the node's key on its algorithm, threads, precision and CPU;
//   model    - a gradient-boosted-trees regressor (XGBoost) trained on the store's rows of the
//              node's op type (at least `min_rows` of them), features from predict/features.h;
//   roofline - max(FLOPs / measured FP32 peak, bytes / measured bandwidth), a lower bound.
// Each layer says which. Inside a model a layer's time falls between its isolated times with
// warm and with cold inputs; `regime` picks reused, fresh or mid (their geometric mean).
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
  std::optional<double> energy_j;
  std::string energy_source;
};

struct Prediction {
  std::string model, cpu, isa, precision, regime, store;
  int threads = 1;
  double latency_ms = 0;  // sum of the layers
  std::optional<double> energy_j;
  std::string energy_source;  // one source, or "mixed: ..." listing them
  std::vector<LayerPrediction> layers;  // execution order
  // Share of the predicted time and number of layers per source (exact, model, roofline).
  std::map<std::string, double> coverage_pct;
  std::map<std::string, int> coverage_layers;
  std::map<std::string, int> training_rows;  // op type -> rows its regressor learned from
  nlohmann::json to_json() const;
};

struct PredictorOptions {
  std::string regime = "mid";  // reused | fresh | mid
  std::vector<std::string> exclude_origins;  // leave-one-out: hide rows only these origins made
  int min_rows = 8;            // fewer rows of an op type: roofline instead of a regressor
};

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
