// The "permute" algorithm of the lookup op class (joule LookupTable, ops/lookup_table.cpp): 64
// codes per step with AVX-512 VBMI (the 256-byte table in four registers, two two-register byte
// permutes on the index's low 7 bits, blended by its top bit); without VBMI a byte loop. Spans
// split over threads.
#include <immintrin.h>

#include <cstring>

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

void lookup_bytes(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

bool have_vbmi() {
  static const bool v = cpu_features().avx512 && __builtin_cpu_supports("avx512vbmi");
  return v;
}

class LookupKernel : public Kernel {
 public:
  LookupKernel(std::vector<uint8_t> table, DType to) : table_(std::move(table)), to_(to) {}
  void run(ops::KernelContext& k) const override {
    const Tensor& x = k.in(0);
    Tensor& y = k.output(0, to_, x.shape());
    const auto* in = static_cast<const uint8_t*>(x.raw());
    auto* out = static_cast<uint8_t*>(y.raw());
    const bool vbmi = have_vbmi();
    constexpr int64_t kSpan = 4096;
    const int64_t n = x.numel(), spans = (n + kSpan - 1) / kSpan;
    split_items(k.pool, spans, kSpan, [&](int64_t b, int64_t e) {
      const int64_t lo = b * kSpan, hi = std::min(n, e * kSpan);
      if (vbmi) lookup_vbmi(table_.data(), in + lo, out + lo, hi - lo);
      else lookup_bytes(table_.data(), in + lo, out + lo, hi - lo);
    });
  }

 private:
  std::vector<uint8_t> table_;
  DType to_;
};

std::string supports(const NodeView& v) {
  if (!v.has(0)) return "no input type";
  std::vector<uint8_t> table;
  DType to = DType::Undefined;
  return ops::lookup_table_problem(v.node, v.in_types[0]->dtype, &table, &to);
}

// Memory-bound with VBMI (~0.02 ns a code), a dependent load per code without.
double estimate_ms(const NodeView& v) {
  const double per = have_vbmi() ? 0.02e-6 : 0.4e-6;
  return static_cast<double>(planned_numel(v, 0)) * per / std::max(1, v.threads) + 0.001;
}

std::unique_ptr<Kernel> prepare(const NodeView& v) {
  std::vector<uint8_t> table;
  DType to = DType::Undefined;
  if (std::string why = ops::lookup_table_problem(v.node, v.in_types[0]->dtype, &table, &to); !why.empty())
    fail_internal(v.node.where() + ": " + why);
  return std::make_unique<LookupKernel>(std::move(table), to);
}

}  // namespace

extern const Algorithm kLookupPermute;
const Algorithm kLookupPermute{"lookup", "permute",
                               "LookupTable on 8-bit codes: AVX-512 VBMI byte permutes, 64 codes a step (a byte loop "
                               "without VBMI), threaded",
                               supports, estimate_ms, prepare};

}  // namespace joule::kernels
