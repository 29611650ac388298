#pragma once
// A small gradient-boosted-trees regressor over XGBoost's C API (Debian's libxgboost 1.7): one
// per operator type in the latency predictor, trained on a few dozen to a few thousand rows of
// numeric features. NaN in a feature means "missing" (XGBoost learns a default branch for it).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace joule::predict {

struct RegressorParams {
  int rounds = 200;
  int max_depth = 6;
  double eta = 0.1;
  double subsample = 1.0;
  double min_child_weight = 1.0;
  double lambda = 1.0;
  int threads = 1;    // XGBoost's nthread (same threads and seed: the same model, bit for bit)
  uint64_t seed = 0;  // only matters with subsample < 1
};

// Squared-error boosting with the exact greedy tree method, so that the same data, params and
// seed give the same trees run to run. Movable, not copyable; owns an XGBoost booster.
class Regressor {
 public:
  Regressor(Regressor&& other) noexcept;
  Regressor& operator=(Regressor&& other) noexcept;
  Regressor(const Regressor&) = delete;
  Regressor& operator=(const Regressor&) = delete;
  ~Regressor();

  // Rows X (>= 1, all the same length >= 1) and targets y (one per row, finite). Throws
  // joule::Error on bad shapes or when XGBoost fails (with its message).
  static Regressor train(const std::vector<std::vector<float>>& X, const std::vector<float>& y,
                         const RegressorParams& p = {});

  // Rows of num_features() values each; no rows gives no predictions.
  std::vector<float> predict(const std::vector<std::vector<float>>& X) const;
  float predict(const std::vector<float>& row) const;
  size_t num_features() const { return num_features_; }

  // The model as XGBoost's UBJSON (binary JSON); from_bytes gives back exactly the same
  // predictions. from_bytes also reads XGBoost's text JSON models.
  std::string to_bytes() const;
  static Regressor from_bytes(const std::string& bytes);

 private:
  explicit Regressor(void* booster);
  void* booster_ = nullptr;  // BoosterHandle (kept out of the header: no xgboost include here)
  size_t num_features_ = 0;
};

}  // namespace joule::predict
