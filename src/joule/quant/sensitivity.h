#pragma once
// Per-layer quantization sensitivity (AIMET QuantAnalyzer, ORT qdq_loss_debug, torch.ao numeric
// suite), on one calibrated plan:
//   cumulative  the whole model quantized; every quantized layer's output compared with the
//               FP32 model's at the same point
//   isolated    only layer i quantized, one model per layer; the final output compared with FP32
//               (and top-1 accuracy when labels are given)
// each in variants: all roles, weights only, activations only.
//
// Metrics over the samples: SQNR = 10 log10(sum ref^2 / sum (ref - q)^2) with the sums over all
// samples' elements (one pooled ratio, +inf when the outputs are identical); cosine similarity
// and MSE averaged over samples; max abs error the largest over samples.
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "joule/quant/qdq.h"
#include "joule/report/plot.h"

namespace joule::quant {

struct Metrics {
  double sqnr_db = std::numeric_limits<double>::quiet_NaN();
  double cosine = std::numeric_limits<double>::quiet_NaN();
  double mse = std::numeric_limits<double>::quiet_NaN();
  double max_abs = std::numeric_limits<double>::quiet_NaN();
  size_t samples = 0;
  nlohmann::json to_json() const;
};

// Accumulates the comparison of a reference tensor with its quantized counterpart.
class MetricsAccumulator {
 public:
  void add(const Tensor& ref, const Tensor& q);  // same shape, float32
  Metrics result() const;

 private:
  double signal_ = 0, noise_ = 0, cos_sum_ = 0, mse_sum_ = 0, max_abs_ = 0;
  size_t n_ = 0;
};

enum class SensitivityMode { Cumulative, Isolated };
SensitivityMode sensitivity_mode_from_name(const std::string& s);  // BadInput otherwise

// "all" (every role of the plan), "weights" (weight and bias), "activations" (input and output).
const std::vector<std::string>& sensitivity_variants();

struct SensitivityOptions {
  SensitivityMode mode = SensitivityMode::Cumulative;
  std::vector<std::string> variants = sensitivity_variants();
  int threads = 1;
  std::function<void(const std::string& what)> progress;
};

struct LayerSensitivity {
  std::string node, op, tensor;  // tensor: the layer output compared (cumulative)
  size_t order = 0;              // position in graph order
  std::map<std::string, Metrics> metrics;            // by variant
  std::map<std::string, double> accuracy;            // isolated with labels: top-1 by variant
};

struct SensitivityReport {
  SensitivityMode mode = SensitivityMode::Cumulative;
  std::vector<std::string> variants;
  std::vector<LayerSensitivity> layers;     // graph order
  std::map<std::string, Metrics> final_output;  // cumulative: the model's first output, by variant
  std::optional<double> fp32_accuracy;      // with labels
  std::map<std::string, double> quant_accuracy;  // cumulative with labels, by variant
  size_t samples = 0;
  nlohmann::json to_json() const;
  std::string table(size_t top = 0) const;  // sorted by damage (lowest SQNR of the first variant)
  std::string csv() const;
  std::string svg(const std::string& title) const;  // bar chart of per-layer SQNR in graph order
};

// The per-layer SQNR bar chart of a report's JSON (SensitivityReport::to_json): what svg() draws
// and what `joule report` shows for a sensitivity step.
plot::BarChart sensitivity_chart(const nlohmann::json& report, const std::string& title);

// `g` is the prepared FP32 graph the plan was made on; `samples` the inputs compared over;
// `labels` (empty, or one per sample) for accuracy.
SensitivityReport sensitivity(const ir::Graph& g, const QuantPlan& plan, const std::vector<runtime::TensorMap>& samples,
                              const std::vector<int64_t>& labels, const SensitivityOptions& o);

}  // namespace joule::quant
