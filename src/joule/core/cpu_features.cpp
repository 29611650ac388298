#include "joule/core/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "joule/core/error.h"

namespace joule {

namespace {
// Linux (5.16+) gives a process the AMX tile state only on request (what oneDNN does before its
// AMX kernels run); a kernel that refuses it, or predates it, leaves AMX unusable whatever CPUID says.
bool amx_permitted() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr int kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

CpuFeatures detect() {
  CpuFeatures f;
  __builtin_cpu_init();
  f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512 = f.avx2_fma && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  f.avx512_vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
  unsigned ea = 0, eb = 0, ec = 0, ed = 0;
  if (f.avx512 && __get_cpuid_count(7, 1, &ea, &eb, &ec, &ed)) f.avx512_bf16 = (ea >> 5) & 1;  // leaf 7.1 EAX[5]
  if (f.avx512 && __get_cpuid_count(7, 0, &ea, &eb, &ec, &ed)) f.amx_bf16 = (ed >> 22) & 1;    // leaf 7.0 EDX[22]
  if (f.amx_bf16) f.amx_bf16 = amx_permitted();
  f.int8_dot = f.avx512_vnni;
  if (__get_cpuid_count(7, 1, &ea, &eb, &ec, &ed)) f.int8_dot = f.int8_dot || ((ea >> 4) & 1);  // AVX-VNNI: leaf 7.1 EAX[4]
  if (const char* cap = std::getenv("JOULE_ISA"); cap && *cap) {
    const std::string c = cap;
    f.cap_source = "JOULE_ISA=" + c;
    if (c == "scalar") {
      f.avx2_fma = f.avx512 = f.avx512_vnni = f.avx512_bf16 = f.amx_bf16 = false;
    } else if (c == "avx2") {
      f.avx512 = f.avx512_vnni = f.avx512_bf16 = f.amx_bf16 = false;
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

std::string int8_inexact_reason() {
  const CpuFeatures& f = cpu_features();
  if (f.int8_dot) return "";
  return "oneDNN's int8 kernels on this CPU (" + f.model +
         ", no VNNI) add u8 x s8 products in saturating 16-bit pairs, so their codes can differ from exact integer "
         "arithmetic unless the inputs are uint8 and the weights 7-bit (codes within +-64); the emulated kernel "
         "computes it exactly";
}

std::string avx2_fma_missing_reason() {
  return cpu_features().avx2_fma ? "" : "needs AVX2 with FMA (this CPU: " + cpu_features().isa + ")";
}

std::string bf16_unsupported_reason() {
  const CpuFeatures& f = cpu_features();
  if (f.avx512_bf16 || f.amx_bf16) return "";
  return "bf16 execution needs AVX512-BF16 or AMX-BF16, which this CPU (" + f.model + ", " + f.isa +
         (f.cap_source.empty() ? "" : " capped by " + f.cap_source) + ") lacks";
}

}  // namespace joule
