#pragma once
// Calibrators: watch the values one tensor takes over a calibration set and pick the clipping
// range its quantization should use. Min-max keeps everything; the others trade clipping a few
// outliers for finer resolution of the bulk (percentile, KL entropy, MSE).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace joule::quant {

enum class CalibMethod { MinMax, MovingAverage, Percentile, Entropy, Mse };

struct CalibOptions {
  CalibMethod method = CalibMethod::MinMax;
  double percentile = 99.99;  // Percentile: keeps this % of the mass (symmetric: of |x|;
                              // asymmetric: each tail gets (100-p)/2 %)
  double momentum = 0.01;     // MovingAverage: torch MovingAverageMinMaxObserver rule
  int bins = 2048;            // histogram bins (Percentile/Entropy/Mse)
  int bits = 8;               // target width for Entropy (2^(bits-1) quantized bins of |x|) and Mse
  bool symmetric = true;      // Entropy/Mse/Percentile work on |x| when true, on signed values
                              // when false (then bins must be even: [-R, 0) and [0, R) halves)
};

CalibMethod calib_method_from_name(const std::string& s);  // "minmax", "moving_average", ...
const char* calib_method_name(CalibMethod m);

// Observes a stream of batches of ONE tensor (per-tensor) and returns the clipping range.
//
// Histogram methods keep `bins` bins over [0, R) of |x| (symmetric) or over [-R, R) (asymmetric).
// R is set just above the absmax of the first batch with a nonzero value and doubles whenever a
// later value reaches it, merging bins pairwise: an exact operation, and bit-identical to having
// binned with the doubled R from the start. The exact min and max are tracked too, and every method's range
// lies within [min, max].
class Calibrator {
 public:
  explicit Calibrator(CalibOptions o);

  // One batch (e.g. one sample's tensor). NaN/inf are ignored and counted in ignored().
  void observe(const float* x, int64_t n);
  // (lo, hi) clipping range; lo <= 0 <= hi is not guaranteed. fail() if nothing finite observed.
  std::pair<float, float> range() const;
  int64_t count() const { return count_; }      // finite values observed
  int64_t ignored() const { return ignored_; }  // NaN/inf values skipped
  const CalibOptions& options() const { return opt_; }

  // The whole state (options included), so a --calib-cache file reproduces range() exactly
  // and can keep observing. from_json fails with a message naming the bad field.
  nlohmann::json to_json() const;
  static Calibrator from_json(const nlohmann::json& j);

 private:
  bool uses_histogram() const;
  void grow();                        // doubles R
  void add_to_histogram(float v);
  std::pair<float, float> clip(double t) const;  // (max(min, -t), min(max, t))
  std::pair<float, float> percentile_range() const;
  std::pair<float, float> entropy_range() const;
  std::pair<float, float> mse_range() const;

  CalibOptions opt_;
  int64_t count_ = 0, ignored_ = 0;
  float min_ = 0, max_ = 0;           // exact, valid when count_ > 0
  float ma_min_ = 0, ma_max_ = 0;     // MovingAverage, valid when count_ > 0
  double hist_range_ = 0;             // R; 0 while only zeros were seen (they sit in the zero bin)
  std::vector<int64_t> hist_;
};

// Per-channel ranges of a row-major tensor (weights), one Calibrator per slice along `axis`
// (negative counts from the end), each slice observed as one batch.
void channel_ranges(const CalibOptions& o, const std::vector<int64_t>& shape, int axis,
                    const float* x, std::vector<float>& lo, std::vector<float>& hi);

}  // namespace joule::quant
