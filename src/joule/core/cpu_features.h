#pragma once
// The one place that decides which CPU code paths joule may use (ORT MLAS's platform.cpp
// idea). Detected once; JOULE_ISA=avx2|scalar caps the ISA so every path can be tested on
// a bigger CPU.
#include <string>

namespace joule {

struct CpuFeatures {
  bool avx2_fma = false;
  bool avx512 = false;       // avx512f + bw + vl + dq
  bool avx512_vnni = false;
  std::string isa;           // "avx512", "avx2", "scalar" (after the cap)
  std::string model;         // /proc/cpuinfo "model name"
  std::string cap_source;    // "" or "JOULE_ISA=..."
};

const CpuFeatures& cpu_features();

}  // namespace joule
