#include "joule/profile/cpu_peak.h"

#include <fmt/core.h>

#include <fstream>
#include <string>

#include "joule/core/cpu_features.h"

namespace joule::profile {

namespace {
CpuPeak detect() {
  CpuPeak p;
  const CpuFeatures& f = cpu_features();
  if (f.avx512) {
    p.isa = "avx512f+fma";
    p.flops_per_cycle = 64;  // 2 FMA units x 16 fp32 lanes x 2 flops
  } else if (f.avx2_fma) {
    p.isa = "avx2+fma";
    p.flops_per_cycle = 32;  // 2 FMA units x 8 lanes x 2
  } else {
    p.isa = "scalar/sse";
    p.flops_per_cycle = 8;
  }
  std::ifstream maxf("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double khz = 0;
  if (maxf && (maxf >> khz) && khz > 0) {
    p.ghz = khz / 1e6;
    p.ghz_source = "cpufreq cpuinfo_max_freq";
  } else {
    std::ifstream ci("/proc/cpuinfo");
    std::string line;
    while (std::getline(ci, line)) {
      if (line.rfind("cpu MHz", 0) == 0) {
        auto c = line.find(':');
        if (c != std::string::npos) p.ghz = std::stod(line.substr(c + 1)) / 1e3;
        p.ghz_source = "/proc/cpuinfo 'cpu MHz' (current/nominal clock, turbo not counted)";
        break;
      }
    }
  }
  if (p.ghz <= 0) {
    p.ghz = 1.0;
    p.ghz_source = "unknown clock: 1 GHz assumed";
  }
  p.gflops_per_core = p.flops_per_cycle * p.ghz;
  p.assumptions = fmt::format(
      "FP32 peak = {} FLOP/cycle/core ({}{}) x {:.2f} GHz ({}) = {:.1f} GFLOP/s per core", p.flops_per_cycle, p.isa,
      p.flops_per_cycle >= 32 ? ", 2 FMA units assumed" : "", p.ghz, p.ghz_source, p.gflops_per_core);
  return p;
}
}  // namespace

const CpuPeak& cpu_peak() {
  static const CpuPeak p = detect();
  return p;
}

double peak_gflops(int threads) { return cpu_peak().gflops_per_core * (threads > 0 ? threads : 1); }

nlohmann::json to_json(const CpuPeak& p, int threads) {
  return {{"isa", p.isa},
          {"flops_per_cycle_per_core", p.flops_per_cycle},
          {"ghz", p.ghz},
          {"ghz_source", p.ghz_source},
          {"cores", threads},
          {"peak_gflops", p.gflops_per_core * threads},
          {"assumptions", p.assumptions}};
}

}  // namespace joule::profile
