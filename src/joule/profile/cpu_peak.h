#pragma once
// This CPU's FP32 peak and memory bandwidth, for "% of peak" columns and roofline bounds.
// Measured, not assumed: a loop of independent FMA chains at the widest ISA joule may use
// (core/cpu_features) and a read of a buffer 4x the last-level cache, each on 1 thread and on
// every core, best of a few short repetitions. The measurement (~0.3 s) is cached per machine.
// The nominal figure (FLOP/cycle/core of the ISA x clock) stays for comparison. The
// assumptions are returned as text so that every report can print how the figures were derived.
#include <string>

#include <nlohmann/json.hpp>

namespace joule::profile {

struct CpuPeak {
  // Nominal, for comparison: ISA FLOP/cycle with 2 FMA units assumed, times the max clock.
  std::string isa;                 // "avx512f+fma", "avx2+fma", "scalar/sse"
  double flops_per_cycle = 0;      // per core
  double ghz = 0;
  std::string ghz_source;          // file the clock came from
  double gflops_per_core = 0;
  // Measured (or read back from the cache of an earlier measurement on this machine).
  double measured_gflops_1t = 0;        // FP32 FMA loop on 1 thread
  double measured_gflops_all = 0;       // ... on `measure_threads` threads together
  double measured_flops_per_cycle = 0;  // measured_gflops_1t / ghz, for information
  double bandwidth_gbs_1t = 0;          // memory read, GB/s (1e9 bytes/s)
  double bandwidth_gbs_all = 0;
  int measure_threads = 0;              // every core available (ThreadPool::default_threads)
  std::string source;                   // "measured" or "cached <path>"
  bool disturbed = false;               // other work took cores from the loops: not reused from the cache
  std::string assumptions;              // one line
};

// Detected once per process, cached at cpu_peak_cache_path().
const CpuPeak& cpu_peak();
// Measures, or reads the cache at `cache_path` when it holds a measurement of this CPU model,
// ISA, core count and joule version; writes the cache after measuring. A corrupt or disturbed
// cache is ignored (measured again) and an unwritable one is not an error. "" : no cache.
CpuPeak detect_cpu_peak(const std::string& cache_path);
// $JOULE_CPU_PEAK_CACHE, or ~/.cache/joule/cpu_peak.json.
std::string cpu_peak_cache_path();

// Peak for `threads` threads: the 1-thread figure x threads, never above the all-core figure.
double peak_gflops(const CpuPeak& p, int threads);
double peak_bandwidth_gbs(const CpuPeak& p, int threads);
double peak_gflops(int threads);         // of cpu_peak()
double peak_bandwidth_gbs(int threads);  // of cpu_peak()
nlohmann::json to_json(const CpuPeak& p, int threads);

// The last-level cache of cpu0 from sysfs: its size and how many of it the online CPUs have
// (sysconf, then 16 MiB, when sysfs says nothing).
struct Llc {
  size_t bytes = 0;
  int instances = 1;
};
Llc last_level_cache();

}  // namespace joule::profile
