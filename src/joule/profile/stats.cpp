#include "joule/profile/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace joule::profile {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = p / 100.0 * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, v.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return v[lo] + (v[hi] - v[lo]) * frac;
}

Stats summarize(const std::vector<double>& v, double noisy_cv) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  // Sample standard deviation (n - 1), as numpy's std(ddof=1).
  s.std = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0;
  auto [mn, mx] = std::minmax_element(v.begin(), v.end());
  s.min = *mn;
  s.max = *mx;
  s.median = percentile(v, 50);
  s.p90 = percentile(v, 90);
  s.p99 = percentile(v, 99);
  s.cv = s.mean != 0 ? s.std / s.mean : 0;
  double sum = 0;
  size_t kept = 0;
  for (double x : v) {
    if (std::fabs(x - s.mean) <= 3 * s.std) {
      sum += x;
      ++kept;
    }
  }
  s.trimmed = v.size() - kept;
  s.trimmed_mean = kept ? sum / static_cast<double>(kept) : s.mean;
  s.noisy = s.cv > noisy_cv;
  return s;
}

nlohmann::json to_json(const Stats& s) {
  return {{"n", s.n},     {"mean", s.mean},   {"median", s.median}, {"std", s.std},
          {"min", s.min}, {"max", s.max},     {"p90", s.p90},       {"p99", s.p99},
          {"cv", s.cv},   {"trimmed_mean_3sigma", s.trimmed_mean},  {"trimmed_count", s.trimmed},
          {"noisy", s.noisy}};
}

}  // namespace joule::profile
