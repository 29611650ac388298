#pragma once
// This CPU's nominal FP32 peak, for "% of peak" columns: FLOP/cycle/core from the ISA
// (detected once) times the clock times the cores used. The assumptions are returned as
// text so that every report can print how the figure was derived.
#include <string>

#include <nlohmann/json.hpp>

namespace joule::profile {

struct CpuPeak {
  std::string isa;                 // "avx512f+fma", "avx2+fma", "scalar/sse"
  double flops_per_cycle = 0;      // per core
  double ghz = 0;
  std::string ghz_source;          // file the clock came from
  double gflops_per_core = 0;
  std::string assumptions;         // one line
};

// Detected once per process.
const CpuPeak& cpu_peak();
// Peak for `threads` cores.
double peak_gflops(int threads);
nlohmann::json to_json(const CpuPeak& p, int threads);

}  // namespace joule::profile
