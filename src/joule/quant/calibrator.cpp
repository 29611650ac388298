#include "joule/quant/calibrator.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "joule/core/error.h"

namespace joule::quant {

namespace {

constexpr int kJsonVersion = 1;
constexpr int kMaxBins = 1 << 20;
constexpr int kMaxEntropyBins = 1 << 14;  // the KL search is quadratic in the bin count
constexpr int kMseSteps = 400;            // MSE candidates: absmax * k / 400, k = 4..400 (1%..100%)

struct MethodName {
  CalibMethod method;
  const char* name;
};
constexpr MethodName kMethodNames[] = {
    {CalibMethod::MinMax, "minmax"},         {CalibMethod::MovingAverage, "moving_average"},
    {CalibMethod::Percentile, "percentile"}, {CalibMethod::Entropy, "entropy"},
    {CalibMethod::Mse, "mse"},
};

void validate_options(const CalibOptions& o) {
  if (!(o.percentile > 0 && o.percentile <= 100))
    fail("calibration percentile must be in (0, 100], got " + std::to_string(o.percentile));
  if (!(o.momentum > 0 && o.momentum <= 1))
    fail("calibration momentum must be in (0, 1], got " + std::to_string(o.momentum));
  if (o.bins < 2 || o.bins > kMaxBins)
    fail("calibration bins must be 2.." + std::to_string(kMaxBins) + ", got " + std::to_string(o.bins));
  if (o.bits < 2 || o.bits > 16) fail("calibration bits must be 2..16, got " + std::to_string(o.bits));
  const bool hist = o.method == CalibMethod::Percentile || o.method == CalibMethod::Entropy ||
                    o.method == CalibMethod::Mse;
  if (hist && !o.symmetric && o.bins % 2 != 0)
    fail("calibration bins must be even for an asymmetric histogram, got " + std::to_string(o.bins));
  if (o.method == CalibMethod::Entropy) {
    const int abs_bins = o.symmetric ? o.bins : o.bins / 2;
    if (abs_bins < (1 << (o.bits - 1)))
      fail("entropy calibration needs at least " + std::to_string(1 << (o.bits - 1)) + " |x| bins for " +
           std::to_string(o.bits) + " bits, got " + std::to_string(abs_bins) +
           (o.symmetric ? "" : " (half of bins when asymmetric)"));
    if (o.bins > kMaxEntropyBins)
      fail("entropy calibration bins must be at most " + std::to_string(kMaxEntropyBins) + ", got " +
           std::to_string(o.bins));
  }
}

// The point where the cumulative count reaches `target`, interpolating linearly inside the bin
// (values are taken as uniform within a bin). Bins start at `origin` and are `width` wide.
double histogram_position(const std::vector<int64_t>& h, double target, double origin, double width) {
  double cum = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    if (h[i] == 0) continue;
    const double next = cum + static_cast<double>(h[i]);
    if (next >= target) {
      const double frac = std::clamp((target - cum) / static_cast<double>(h[i]), 0.0, 1.0);
      return origin + (static_cast<double>(i) + frac) * width;
    }
    cum = next;
  }
  return origin + static_cast<double>(h.size()) * width;
}

// The common (MXNet / onnxruntime) smoothing: zero bins get eps, taken evenly from the nonzero
// ones, so KL(P||Q) stays finite. False when the distribution cannot be smoothed.
bool smooth(std::vector<double>& d) {
  constexpr double kEps = 1e-4;
  size_t zeros = 0;
  for (double v : d) zeros += v == 0;
  const size_t nonzeros = d.size() - zeros;
  if (nonzeros == 0) return false;
  const double eps1 = kEps * static_cast<double>(zeros) / static_cast<double>(nonzeros);
  for (double& v : d) {
    v = v == 0 ? kEps : v - eps1;
    if (v <= 0) return false;
  }
  return true;
}

// TensorRT's entropy calibration on a histogram of |x|: returns the number of bins i (the
// threshold is the upper edge of bin i-1) minimising KL(P || Q), where P is the first i bins
// with everything beyond folded into bin i-1 and Q is those i bins merged into nq levels and
// spread back evenly over P's nonzero bins. Ties keep the smallest i.
size_t entropy_threshold_bins(const std::vector<int64_t>& h, size_t nq) {
  const size_t nb = h.size();
  std::vector<double> suffix(nb + 1, 0.0);  // suffix[i] = sum of h[i..nb)
  for (size_t i = nb; i-- > 0;) suffix[i] = suffix[i + 1] + static_cast<double>(h[i]);
  size_t best_i = nb;
  double best = std::numeric_limits<double>::infinity();
  std::vector<double> p, q, merged(nq);
  for (size_t i = nq; i <= nb; ++i) {
    p.assign(h.begin(), h.begin() + static_cast<std::ptrdiff_t>(i));
    p[i - 1] += suffix[i];  // outliers into the last bin
    const size_t per = i / nq;  // bins per quantized level; the last level takes the remainder
    std::fill(merged.begin(), merged.end(), 0.0);
    for (size_t k = 0; k < i; ++k) merged[std::min(k / per, nq - 1)] += static_cast<double>(h[k]);
    q.assign(i, 0.0);
    for (size_t j = 0; j < nq; ++j) {
      const size_t start = j * per, stop = j + 1 == nq ? i : start + per;
      size_t norm = 0;
      for (size_t k = start; k < stop; ++k) norm += p[k] != 0;
      if (norm == 0) continue;
      for (size_t k = start; k < stop; ++k)
        if (p[k] != 0) q[k] = merged[j] / static_cast<double>(norm);
    }
    if (!smooth(p) || !smooth(q)) continue;  // divergence treated as infinite
    double ps = 0, qs = 0;
    for (size_t k = 0; k < i; ++k) {
      ps += p[k];
      qs += q[k];
    }
    double kl = 0;
    for (size_t k = 0; k < i; ++k) kl += p[k] / ps * std::log((p[k] / ps) / (q[k] / qs));
    if (kl < best) {
      best = kl;
      best_i = i;
    }
  }
  return best_i;
}

// ∫_u^v (x - c)^2 dx, written without cancellation.
double segment_sq(double u, double v, double c) {
  const double a = u - c, b = v - c;
  return (v - u) * (a * a + a * b + b * b) / 3;
}

// Q(x) = s * clamp(round(x / s), kmin, kmax): uniform quantization with clipping.
double quantize_model(double x, double s, double kmin, double kmax) {
  return s * std::clamp(std::nearbyint(x / s), kmin, kmax);
}

// ∫_u^v (x - Q(x))^2 dx, cell by cell: Q is constant on [(k-0.5)s, (k+0.5)s), and on the
// clipped tails beyond the outer cells.
double interval_sq_error(double u, double v, double s, double kmin, double kmax) {
  double k = std::clamp(std::floor(u / s + 0.5), kmin, kmax);
  double x = u, total = 0;
  while (x < v) {
    const double upper = k >= kmax ? v : std::min(v, (k + 0.5) * s);
    if (upper > x) total += segment_sq(x, upper, k * s);
    x = std::max(x, upper);
    k += 1;
  }
  return total;
}

// Expected squared error of the histogram's values under Q, taking each bin's count as uniform
// over the bin clipped to [lo, hi] (the true min/max), or as a point mass when that is empty.
double histogram_sq_error(const std::vector<int64_t>& h, double origin, double width, double lo,
                          double hi, double s, double kmin, double kmax) {
  double total = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    if (h[i] == 0) continue;
    const double a = std::max(origin + static_cast<double>(i) * width, lo);
    const double b = std::min(origin + static_cast<double>(i + 1) * width, hi);
    const double n = static_cast<double>(h[i]);
    if (b > a) {
      total += n / (b - a) * interval_sq_error(a, b, s, kmin, kmax);
    } else {
      const double x = std::clamp(a, lo, hi), e = x - quantize_model(x, s, kmin, kmax);
      total += n * e * e;
    }
  }
  return total;
}

}  // namespace

CalibMethod calib_method_from_name(const std::string& s) {
  for (const auto& m : kMethodNames)
    if (s == m.name) return m.method;
  fail("unknown calibration method '" + s +
       "' (expected minmax, moving_average, percentile, entropy or mse)");
}

const char* calib_method_name(CalibMethod m) {
  for (const auto& n : kMethodNames)
    if (n.method == m) return n.name;
  return "?";
}

Calibrator::Calibrator(CalibOptions o) : opt_(o) {
  validate_options(opt_);
  if (uses_histogram()) hist_.assign(static_cast<size_t>(opt_.bins), 0);
}

bool Calibrator::uses_histogram() const {
  return opt_.method == CalibMethod::Percentile || opt_.method == CalibMethod::Entropy ||
         opt_.method == CalibMethod::Mse;
}

void Calibrator::grow() {
  // Bin i of the old histogram lies wholly inside bin j of the doubled one; for |x| bins
  // j = i/2, for signed bins (half = bins/2 on each side of 0) j = (i + half)/2.
  const size_t nb = hist_.size();
  const size_t shift = opt_.symmetric ? 0 : nb / 2;
  std::vector<int64_t> next(nb, 0);
  for (size_t i = 0; i < nb; ++i) next[(i + shift) / 2] += hist_[i];
  hist_.swap(next);
  hist_range_ *= 2;
}

void Calibrator::add_to_histogram(float v) {
  const int64_t nb = static_cast<int64_t>(hist_.size());
  int64_t idx;
  if (opt_.symmetric) {
    idx = hist_range_ == 0 ? 0 : static_cast<int64_t>(std::fabs(static_cast<double>(v)) / hist_range_ * nb);
  } else {
    const int64_t half = nb / 2;
    const double t = hist_range_ == 0 ? 0.0 : v / hist_range_ * static_cast<double>(half);
    idx = half + static_cast<int64_t>(std::floor(t));
  }
  hist_[static_cast<size_t>(std::clamp<int64_t>(idx, 0, nb - 1))] += 1;
}

void Calibrator::observe(const float* x, int64_t n) {
  if (n < 0) fail("calibrator: negative batch size " + std::to_string(n));
  if (n > 0 && x == nullptr) fail("calibrator: null data for a batch of " + std::to_string(n));
  float bmin = std::numeric_limits<float>::infinity(), bmax = -bmin;
  int64_t finite = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) continue;
    bmin = std::min(bmin, x[i]);
    bmax = std::max(bmax, x[i]);
    ++finite;
  }
  ignored_ += n - finite;
  if (finite == 0) return;  // nothing usable: not a batch for the moving average either

  if (count_ == 0) {
    min_ = bmin;
    max_ = bmax;
    ma_min_ = bmin;  // torch: the first batch sets the moving average
    ma_max_ = bmax;
  } else {
    min_ = std::min(min_, bmin);
    max_ = std::max(max_, bmax);
    // torch MovingAverageMinMaxObserver, in float32 as torch computes it.
    const float c = static_cast<float>(opt_.momentum);
    ma_min_ = ma_min_ + c * (bmin - ma_min_);
    ma_max_ = ma_max_ + c * (bmax - ma_max_);
  }
  count_ += finite;

  if (!uses_histogram()) return;
  const double absmax = std::max(-static_cast<double>(bmin), static_cast<double>(bmax));
  // Bins are half-open, [-R, R) or [0, R): R starts a hair above the first nonzero absmax so
  // that value is inside, not clamped into the top bin (clamping would break the exactness of
  // doubling). Zeros seen before stay in the zero bin, which no doubling moves.
  if (hist_range_ == 0 && absmax > 0) hist_range_ = absmax * (1 + 0x1p-40);
  while (hist_range_ > 0 && absmax >= hist_range_) grow();
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(x[i])) add_to_histogram(x[i]);
}

std::pair<float, float> Calibrator::clip(double t) const {
  return {static_cast<float>(std::max(static_cast<double>(min_), -t)),
          static_cast<float>(std::min(static_cast<double>(max_), t))};
}

std::pair<float, float> Calibrator::range() const {
  if (count_ == 0) fail("calibrator: no finite values observed");
  switch (opt_.method) {
    case CalibMethod::MinMax: return {min_, max_};
    case CalibMethod::MovingAverage: return {ma_min_, ma_max_};
    case CalibMethod::Percentile:
    case CalibMethod::Entropy:
    case CalibMethod::Mse:
      if (hist_range_ == 0) return {min_, max_};  // only zeros
      if (opt_.method == CalibMethod::Percentile) return percentile_range();
      if (opt_.method == CalibMethod::Entropy) return entropy_range();
      return mse_range();
  }
  return {min_, max_};
}

std::pair<float, float> Calibrator::percentile_range() const {
  const double total = static_cast<double>(count_);
  const double nb = static_cast<double>(hist_.size());
  if (opt_.symmetric)
    return clip(histogram_position(hist_, opt_.percentile / 100 * total, 0, hist_range_ / nb));
  const double tail = (100 - opt_.percentile) / 200;
  const double width = 2 * hist_range_ / nb;
  const double lo = histogram_position(hist_, tail * total, -hist_range_, width);
  const double hi = histogram_position(hist_, (1 - tail) * total, -hist_range_, width);
  return {static_cast<float>(std::max<double>(min_, lo)), static_cast<float>(std::min<double>(max_, hi))};
}

std::pair<float, float> Calibrator::entropy_range() const {
  std::vector<int64_t> abs_hist;
  double width;
  if (opt_.symmetric) {
    abs_hist = hist_;
    width = hist_range_ / static_cast<double>(hist_.size());
  } else {  // fold [-R, 0) onto [0, R): bins are mirror images since bins is even
    const size_t half = hist_.size() / 2;
    abs_hist.resize(half);
    for (size_t k = 0; k < half; ++k) abs_hist[k] = hist_[half + k] + hist_[half - 1 - k];
    width = hist_range_ / static_cast<double>(half);
  }
  const size_t nq = size_t{1} << (opt_.bits - 1);
  return clip(static_cast<double>(entropy_threshold_bins(abs_hist, nq)) * width);
}

std::pair<float, float> Calibrator::mse_range() const {
  const double nb = static_cast<double>(hist_.size());
  double best = std::numeric_limits<double>::infinity();
  int best_k = kMseSteps;
  if (opt_.symmetric) {
    // |x| quantized with 2^(bits-1)-1 steps up to T (the symmetric signed grid).
    const double absmax = std::max(-static_cast<double>(min_), static_cast<double>(max_));
    const double kmax = std::ldexp(1.0, opt_.bits - 1) - 1;
    // The smallest |x| is known only when all values share a sign; otherwise 0 bounds it.
    const double lo_abs = min_ >= 0 ? min_ : max_ <= 0 ? -static_cast<double>(max_) : 0.0;
    for (int k = kMseSteps; k >= kMseSteps / 100; --k) {  // from the top: ties keep the wider range
      const double t = absmax * k / kMseSteps;
      const double e = histogram_sq_error(hist_, 0, hist_range_ / nb, lo_abs, absmax, t / kmax, 0, kmax);
      if (e < best) {
        best = e;
        best_k = k;
      }
    }
    return clip(absmax * best_k / kMseSteps);
  }
  // Signed values on the asymmetric unsigned grid of 2^bits levels spanning alpha*[l, h].
  const double l = std::min(static_cast<double>(min_), 0.0), h = std::max(static_cast<double>(max_), 0.0);
  const double levels = std::ldexp(1.0, opt_.bits) - 1;
  for (int k = kMseSteps; k >= kMseSteps / 100; --k) {
    const double alpha = static_cast<double>(k) / kMseSteps;
    const double s = alpha * (h - l) / levels;
    const double zp = std::clamp(std::nearbyint(-alpha * l / s), 0.0, levels);
    const double e = histogram_sq_error(hist_, -hist_range_, 2 * hist_range_ / nb, min_, max_, s, -zp,
                                        levels - zp);
    if (e < best) {
      best = e;
      best_k = k;
    }
  }
  const double alpha = static_cast<double>(best_k) / kMseSteps;
  return {static_cast<float>(std::max<double>(min_, alpha * l)),
          static_cast<float>(std::min<double>(max_, alpha * h))};
}

nlohmann::json Calibrator::to_json() const {
  nlohmann::json j = {
      {"version", kJsonVersion},
      {"method", calib_method_name(opt_.method)},
      {"percentile", opt_.percentile},
      {"momentum", opt_.momentum},
      {"bins", opt_.bins},
      {"bits", opt_.bits},
      {"symmetric", opt_.symmetric},
      {"count", count_},
      {"ignored", ignored_},
  };
  if (count_ > 0) {  // min/max are meaningless (and inf is not JSON) before the first value
    j["min"] = min_;
    j["max"] = max_;
    if (opt_.method == CalibMethod::MovingAverage) {
      j["ma_min"] = ma_min_;
      j["ma_max"] = ma_max_;
    }
  }
  if (uses_histogram()) {
    j["hist_range"] = hist_range_;
    j["hist"] = hist_;
  }
  return j;
}

Calibrator Calibrator::from_json(const nlohmann::json& j) {
  const std::string where = "calibration cache";
  try {
    if (!j.is_object()) fail(where + ": not a JSON object");
    if (j.value("version", 0) != kJsonVersion)
      fail(where + ": version must be " + std::to_string(kJsonVersion));
    CalibOptions o;
    o.method = calib_method_from_name(j.at("method").get<std::string>());
    o.percentile = j.at("percentile").get<double>();
    o.momentum = j.at("momentum").get<double>();
    o.bins = j.at("bins").get<int>();
    o.bits = j.at("bits").get<int>();
    o.symmetric = j.at("symmetric").get<bool>();
    Calibrator c(o);
    c.count_ = j.at("count").get<int64_t>();
    c.ignored_ = j.at("ignored").get<int64_t>();
    if (c.count_ < 0 || c.ignored_ < 0) fail(where + ": negative count");
    if (c.count_ > 0) {
      c.min_ = static_cast<float>(j.at("min").get<double>());
      c.max_ = static_cast<float>(j.at("max").get<double>());
      if (!(c.min_ <= c.max_)) fail(where + ": min > max");
      c.ma_min_ = c.min_;
      c.ma_max_ = c.max_;
      if (o.method == CalibMethod::MovingAverage) {
        c.ma_min_ = static_cast<float>(j.at("ma_min").get<double>());
        c.ma_max_ = static_cast<float>(j.at("ma_max").get<double>());
      }
    }
    if (c.uses_histogram()) {
      c.hist_range_ = j.at("hist_range").get<double>();
      c.hist_ = j.at("hist").get<std::vector<int64_t>>();
      if (!(c.hist_range_ >= 0) || !std::isfinite(c.hist_range_)) fail(where + ": bad hist_range");
      if (c.hist_.size() != static_cast<size_t>(o.bins))
        fail(where + ": hist has " + std::to_string(c.hist_.size()) + " bins, expected " +
             std::to_string(o.bins));
      int64_t sum = 0;
      for (int64_t v : c.hist_) {
        if (v < 0) fail(where + ": negative histogram count");
        sum += v;
      }
      if (sum != c.count_)
        fail(where + ": histogram holds " + std::to_string(sum) + " values, count says " +
             std::to_string(c.count_));
    }
    return c;
  } catch (const nlohmann::json::exception& e) {
    fail(where + ": " + e.what());
  }
}

void channel_ranges(const CalibOptions& o, const std::vector<int64_t>& shape, int axis, const float* x,
                    std::vector<float>& lo, std::vector<float>& hi) {
  validate_options(o);
  const int rank = static_cast<int>(shape.size());
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    fail("channel_ranges: axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < rank; ++i) {
    if (shape[i] < 0) fail("channel_ranges: negative dimension " + std::to_string(shape[i]));
    if (i < a) outer *= shape[i];
    if (i > a) inner *= shape[i];
  }
  const int64_t channels = shape[a];
  lo.assign(static_cast<size_t>(channels), 0.0f);
  hi.assign(static_cast<size_t>(channels), 0.0f);
  std::vector<float> slice(static_cast<size_t>(outer * inner));
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t o2 = 0; o2 < outer; ++o2) {
      const float* src = x + (o2 * channels + c) * inner;
      std::copy(src, src + inner, slice.begin() + o2 * inner);
    }
    Calibrator cal(o);
    cal.observe(slice.data(), static_cast<int64_t>(slice.size()));
    if (cal.count() == 0) fail("channel_ranges: channel " + std::to_string(c) + " has no finite values");
    std::tie(lo[static_cast<size_t>(c)], hi[static_cast<size_t>(c)]) = cal.range();
  }
}

}  // namespace joule::quant
