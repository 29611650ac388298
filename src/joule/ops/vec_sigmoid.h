#pragma once
// Sigmoid and SiLU over spans with AVX-512 intrinsics (AVX2 forms of them and of GELU below): the
// hot activation of EfficientNet-style models (SiLU after most convolutions). ops/vec_math.h's
// sigmoid() is the portable form that GCC vectorises; this one is about twice as fast (a degree-5 polynomial for e^-|x|, the 2^n factor
// by vscalefps, 1 / (1 + e) by vrcp14ps and one Newton step instead of a division): 0.17-0.19 ns
// per value against 0.33-0.46 on one Zen 5 core, in L1.
#include <cstdint>

namespace joule::ops::vec {

// y[i] = s(v), or v s(v) when `silu`, for v = x[i] + add (+ res[i] when res is not null):
// s = 1 / (1 + e^-v), relative error below 4e-7 against float64 (tests/ops/test_vec_math.cpp),
// 0 and 1 at -inf and +inf, NaN for NaN (SiLU: NaN at -inf, as PyTorch's x * sigmoid(x)).
// x may be y. Only on CPUs with AVX-512 (core/cpu_features); sigmoid() elsewhere.
void sigmoid_avx512(const float* x, float* y, int64_t n, bool silu, float add = 0.f, const float* res = nullptr);
// The same with AVX2 + FMA, 8 lanes (CPUs without AVX-512: AMD Zen 2/3, ...): 2^n as two
// exponent-bit factors instead of vscalefps, an exact division instead of vrcp14ps; the same
// stated error. Only where core/cpu_features reports avx2_fma.
void sigmoid_avx2(const float* x, float* y, int64_t n, bool silu, float add = 0.f, const float* res = nullptr);
// GELU, exact (erf) form, 8 lanes with AVX2 + FMA: vec_math.h's gelu_erf (the same erfc fit) with
// fused multiply-adds and the e^u of the sigmoid spans; the same stated error as gelu_erf
// (tests/ops/test_vec_math.cpp). x may be y. Only where core/cpu_features reports avx2_fma.
void gelu_avx2(const float* x, float* y, int64_t n);

}  // namespace joule::ops::vec
