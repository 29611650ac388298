// The "permute" algorithm of the lookup op class (joule LookupTable, ops/lookup_table.cpp): 64
// codes per step with AVX-512 VBMI (the 256-byte table in four registers, two two-register byte
// permutes on the index's low 7 bits, blended by its top bit); float32 entries 16 codes per
// step with AVX-512 gathers from the 1 KB table; elsewhere a loop. Spans split over threads.
#include <immintrin.h>


#include "joule/core/cpu_features.h"
#include "joule/core/error.h"
#include "joule/kernels/eltwise/eltwise.h"
#include "joule/ops/lookup_table.h"

namespace joule::kernels {
namespace {

__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void lookup_vbmi(const uint8_t* table, const uint8_t* x,
                                                                           uint8_t* y, int64_t n) {
  const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64);
  const __m512i t2 = _mm512_loadu_si512(table + 128), t3 = _mm512_loadu_si512(table + 192);
  int64_t i = 0;
  while (i < n) {
    const __mmask64 m = n - i >= 64 ? ~0ULL : ~0ULL >> (64 - (n - i));
    const __m512i v = _mm512_maskz_loadu_epi8(m, x + i);
    const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1), hi = _mm512_permutex2var_epi8(t2, v, t3);
    _mm512_mask_storeu_epi8(y + i, m, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
    i += 64;
  }
}

// (GCC 12 warns about _mm512_undefined_* inside its own intrinsics headers.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
__attribute__((target("avx512f"))) void lookup_floats_avx512(const float* table, const uint8_t* x, float* y,
                                                              int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i idx = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    _mm512_storeu_ps(y + i, _mm512_i32gather_ps(idx, table, 4));
  }
  for (; i < n; ++i) y[i] = table[x[i]];
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

void lookup_bytes(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

bool have_vbmi() {
  static const bool v = cpu_features().avx512 && __builtin_cpu_supports("avx512vbmi");
  return v;
}

class LookupKernel : public Kernel {
 public:
  explicit LookupKernel(ops::LookupTableDef t) : t_(std::move(t)) {}
  void run(ops::KernelContext& k) const override {
    const Tensor& x = k.in(0);
    Tensor& y = k.output(0, t_.to, x.shape());
    const auto* in = static_cast<const uint8_t*>(x.raw());
    const bool vbmi = have_vbmi(), avx512 = cpu_features().avx512, floats = t_.to == DType::Float32;
    constexpr int64_t kSpan = 4096;
    const int64_t n = x.numel(), spans = (n + kSpan - 1) / kSpan;
    split_items(k.pool, spans, kSpan, [&](int64_t b, int64_t e) {
      const int64_t lo = b * kSpan, hi = std::min(n, e * kSpan);
      if (floats) {
        float* out = y.data<float>() + lo;
        if (avx512) lookup_floats_avx512(t_.floats.data(), in + lo, out, hi - lo);
        else
          for (int64_t i = lo; i < hi; ++i) out[i - lo] = t_.floats[in[i]];
      } else {
        auto* out = static_cast<uint8_t*>(y.raw());
        if (vbmi) lookup_vbmi(t_.bytes.data(), in + lo, out + lo, hi - lo);
        else lookup_bytes(t_.bytes.data(), in + lo, out + lo, hi - lo);
      }
    });
  }

 private:
  ops::LookupTableDef t_;
};

std::string supports(const NodeView& v) {
  if (!v.has(0)) return "no input type";
  ops::LookupTableDef t;
  return ops::lookup_table_problem(v.node, v.in_types[0]->dtype, &t);
}

// Memory-bound with VBMI (~0.02 ns a code), a dependent load per code without; float entries
// ~0.1 ns (gathers, 4 bytes written a code).
double estimate_ms(const NodeView& v) {
  const bool floats = v.node.attr_int("to", 0) == 1;
  const double per = floats ? (cpu_features().avx512 ? 0.1e-6 : 0.4e-6) : have_vbmi() ? 0.02e-6 : 0.4e-6;
  return static_cast<double>(planned_numel(v, 0)) * per / std::max(1, v.threads) + 0.001;
}

std::unique_ptr<Kernel> prepare(const NodeView& v) {
  ops::LookupTableDef t;
  if (std::string why = ops::lookup_table_problem(v.node, v.in_types[0]->dtype, &t); !why.empty())
    fail_internal(v.node.where() + ": " + why);
  return std::make_unique<LookupKernel>(std::move(t));
}

}  // namespace

extern const Algorithm kLookupPermute;
const Algorithm kLookupPermute{"lookup", "permute",
                               "LookupTable on 8-bit codes: AVX-512 VBMI byte permutes, 64 codes a step (a byte loop "
                               "without VBMI); float32 entries by AVX-512 gathers; threaded",
                               supports, estimate_ms, prepare};

}  // namespace joule::kernels
