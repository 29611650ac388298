#include "joule/core/cpu_features.h"

#include <cstdlib>
#include <fstream>

#include "joule/core/error.h"

namespace joule {

namespace {
CpuFeatures detect() {
  CpuFeatures f;
  __builtin_cpu_init();
  f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512 = f.avx2_fma && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  f.avx512_vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
  if (const char* cap = std::getenv("JOULE_ISA"); cap && *cap) {
    const std::string c = cap;
    f.cap_source = "JOULE_ISA=" + c;
    if (c == "scalar") {
      f.avx2_fma = f.avx512 = f.avx512_vnni = false;
    } else if (c == "avx2") {
      f.avx512 = f.avx512_vnni = false;
    } else if (c != "avx512") {
      fail("JOULE_ISA='" + c + "': expected avx512, avx2 or scalar");
    }
  }
  f.isa = f.avx512 ? "avx512" : f.avx2_fma ? "avx2" : "scalar";
  std::ifstream ci("/proc/cpuinfo");
  std::string line;
  while (std::getline(ci, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto c = line.find(':');
      if (c != std::string::npos) f.model = line.substr(line.find_first_not_of(' ', c + 1));
      break;
    }
  }
  if (f.model.empty()) f.model = "unknown cpu";
  return f;
}
}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

}  // namespace joule
