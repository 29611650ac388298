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
  bool avx512_bf16 = false;  // VDPBF16PS (Zen 4+, Cooper Lake, Sapphire Rapids)
  bool amx_bf16 = false;     // AMX tiles with BF16 (Sapphire Rapids+)
  std::string isa;           // "avx512", "avx2", "scalar" (after the cap)
  std::string model;         // /proc/cpuinfo "model name"
  std::string cap_source;    // "" or "JOULE_ISA=..."
};

const CpuFeatures& cpu_features();
// "" when this CPU executes bfloat16 products natively (AVX512-BF16 or AMX-BF16), else a
// one-line reason naming the CPU (and the JOULE_ISA cap when one is set).
std::string bf16_unsupported_reason();

}  // namespace joule
