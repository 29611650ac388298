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
  bool amx_bf16 = false;     // AMX tiles with BF16 (Sapphire Rapids+), and the OS lets this process use them
  // 8-bit dot products with 32-bit sums (AVX512-VNNI or AVX-VNNI), as the hardware has them:
  // not capped by JOULE_ISA, because oneDNN dispatches on the hardware, not on joule's cap.
  bool int8_dot = false;
  std::string isa;           // "avx512", "avx2", "scalar" (after the cap)
  std::string model;         // /proc/cpuinfo "model name"
  std::string cap_source;    // "" or "JOULE_ISA=..."
};

const CpuFeatures& cpu_features();
// "" when this CPU executes bfloat16 products natively (AVX512-BF16 or AMX-BF16), else a
// one-line reason naming the CPU (and the JOULE_ISA cap when one is set).
std::string bf16_unsupported_reason();
// "" when this CPU has AVX2 with FMA (joule's AVX2 kernels: Winograd, small_m), else a one-line
// reason naming the ISA (after the JOULE_ISA cap).
std::string avx2_fma_missing_reason();
// "" when oneDNN's int8 kernels compute exact integer sums on this CPU (VNNI), else a one-line
// reason: without VNNI they add u8 x s8 products in saturating 16-bit pairs (vpmaddubsw), so
// their codes can differ from the integer arithmetic the simulation computes.
std::string int8_inexact_reason();

}  // namespace joule
