#pragma once
// Summary statistics for repeated measurements, as a profiler should report them: the median
// and the mean after 3-sigma trimming side by side, with the spread and percentiles.
#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

namespace joule::profile {

struct Stats {
  size_t n = 0;
  double mean = 0, median = 0, std = 0, min = 0, max = 0, p90 = 0, p99 = 0;
  double cv = 0;            // std / mean
  double trimmed_mean = 0;  // mean of the values within 3 std of the mean
  size_t trimmed = 0;       // how many values the 3-sigma rule discarded
  bool noisy = false;       // cv above the threshold given to summarize()
};

// Percentiles by linear interpolation between closest ranks (numpy's default).
double percentile(std::vector<double> values, double p);
Stats summarize(const std::vector<double>& values, double noisy_cv = 0.05);
nlohmann::json to_json(const Stats& s);

}  // namespace joule::profile
