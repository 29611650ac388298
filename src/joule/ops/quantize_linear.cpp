// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear (ONNX opsets 10-21, integer types),
// and joule's QuantizeLinear: ONNX's with attributes clip_min / clip_max (default -inf / +inf),
// the input clamped to them first — a Relu or Clip that lower_int8 folded into the quantization —
// and an optional fourth input B with attribute binary = "Add" | "Mul": the input is x + B or
// x * B first (B broadcast to x's shape; float32), the Add or Mul that fuse_quantize folded in:
//   y = Q(clamp(x op B)), each step the float arithmetic of the separate ops, so the same codes.
//   Quantize:   y = saturate(round_half_even(x / scale) + zero_point), in zero_point's type (uint8 by default)
//   Dequantize: y = (x - zero_point) * scale
// A scalar (or one-element) scale is per tensor; a 1-D scale of length D is per axis (attribute
// `axis`, default 1). Blocked quantization (opset 21 `block_size`) and float8 types are unsupported.
// x / scale is a float division, as ONNX Runtime computes it, so joule and ORT agree bit for bit
// (the AVX-512 loop multiplies by 1 / scale and divides only where that could round otherwise).
#include <immintrin.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 on the intrinsics' _mm512_undefined_*
#endif

#include <cmath>
#include <limits>

#include "joule/core/cpu_features.h"
#include "joule/ops/quantize_util.h"
#include "joule/ops/vec_math.h"
#include "joule/ops/util.h"

namespace joule::ops {
namespace {

bool is_quant_int(DType t) {
  return t == DType::Int8 || t == DType::UInt8 || t == DType::Int16 || t == DType::UInt16;
}

std::string check_quant(const ir::Node& n, int64_t) {
  if (n.attr_int("block_size", 0) != 0) return "blocked quantization (block_size) is not supported";
  return "";
}

// Per-axis layout of a scale/zero-point pair against an input shape: outer x channels x inner.
struct AxisLayout {
  int64_t outer = 1, channels = 1, inner = 1;
};

AxisLayout axis_layout(const KernelContext& c, const Shape& shape, const Tensor& scale) {
  AxisLayout l;
  l.inner = shape_numel(shape);
  if (scale.numel() == 1 && scale.rank() <= 1) return l;
  JOULE_CHECK(scale.rank() == 1, c.node.where() + ": scale must be a scalar or 1-D, got " + scale.describe());
  const int64_t axis = normalize_axis(c.node.attr_int("axis", 1), static_cast<int64_t>(shape.size()), c.node);
  JOULE_CHECK(shape[static_cast<size_t>(axis)] == scale.numel(),
              c.node.where() + ": scale has " + std::to_string(scale.numel()) + " entries but axis " +
                  std::to_string(axis) + " of the input has " + std::to_string(shape[static_cast<size_t>(axis)]));
  l.outer = 1;
  for (int64_t i = 0; i < axis; ++i) l.outer *= shape[static_cast<size_t>(i)];
  l.channels = scale.numel();
  l.inner = 1;
  for (size_t i = static_cast<size_t>(axis) + 1; i < shape.size(); ++i) l.inner *= shape[i];
  return l;
}

void check_zero_point(const KernelContext& c, const Tensor& scale) {
  if (!c.has(2)) return;
  JOULE_CHECK(c.in(2).numel() == scale.numel(),
              c.node.where() + ": zero_point " + c.in(2).describe() + " does not match scale " + scale.describe());
}

std::vector<float> scales_as_float(const KernelContext& c, const Tensor& s) {
  JOULE_CHECK(is_floating(s.dtype()), c.node.where() + ": scale must be floating point, got " + s.describe());
  std::vector<float> v(static_cast<size_t>(s.numel()));
  for (int64_t i = 0; i < s.numel(); ++i) v[static_cast<size_t>(i)] = static_cast<float>(s.value_as_double(i));
  return v;
}

DType quant_output_type(const ir::Node& n, const std::vector<const ir::TensorType*>& in) {
  if (in.size() > 2 && in[2]) return in[2]->dtype;
  if (n.has_attr("output_dtype")) return dtype_from_onnx(static_cast<int>(n.attr_int("output_dtype", 0)));
  return DType::UInt8;
}

void infer_quantize(InferContext& c) {
  c.out(0) = c.in(0);
  c.out(0).dtype = quant_output_type(c.node, c.input_types);
}

// One contiguous span: y = saturate(round_half_even(clamp(x, lo, hi) / s) + z). Adding and
// subtracting 1.5 * 2^23 rounds |v| < 2^22 to the nearest integer, ties to even (the default
// rounding mode), without a libm call, so the loop vectorises (this file is built with
// -fno-trapping-math, which lets GCC if-convert the clamps; values are unchanged). v is first
// clamped to one past the code range, which keeps it small and changes no saturated result; NaN
// passes the lo/hi clamp and ends at `lo` of the codes.
template <class Q>
inline __attribute__((always_inline)) void quantize_span(const float* xp, Q* yp, int64_t n, float s, float z, float clo,
                                                         float chi) {
  const float lo = static_cast<float>(std::numeric_limits<Q>::min());
  const float hi = static_cast<float>(std::numeric_limits<Q>::max());
  constexpr float kRound = 12582912.0f;
  const float vlo = lo - z - 1, vhi = hi - z + 1;
  for (int64_t i = 0; i < n; ++i) {
    float x = xp[i];
    x = x < clo ? clo : x;  // (NaN fails both compares: stays NaN, as Relu/Clip keep it)
    x = x > chi ? chi : x;
    float v = x / s;  // a division, as ONNX Runtime computes it
    v = v >= vlo ? v : vlo;  // (NaN fails the compare: vlo)
    v = v > vhi ? vhi : v;
    float q = ((v + kRound) - kRound) + z;
    q = q < lo ? lo : (q > hi ? hi : q);
    yp[i] = static_cast<Q>(static_cast<int32_t>(q));
  }
}

// The same codes with AVX-512, 16 at a time, with a multiply by 1/s in place of the division
// (0.12 against 0.25 ns per value on one Zen 5 core). v = x * (1/s) is within |x/s| * 3 * 2^-24
// of the correctly rounded x / s, so both round to the same integer unless v lies within
// |v| * 2^-22 of a half-integer: those lanes (about 1 in 2^20 of ordinary values, and every
// |v| >= 2^21) are divided as the reference does. Rounding (ties to even), the zero point and
// saturation then give the reference's codes, NaN and +-inf included, bit for bit
// (tests/ops/test_int_ops.cpp). A scale whose reciprocal is not a normal float takes the loop above.
template <class Q, bool Full>
JOULE_AVX512 JOULE_ALWAYS_INLINE void quantize16(__m512 x, Q* yp, __mmask16 m, __m512 s, __m512 inv, __m512 z,
                                                 __m512 clo, __m512 chi, __m512 lo, __m512 hi) {
  x = _mm512_min_ps(chi, _mm512_max_ps(clo, x));  // (max/min return the second operand, x, when it is NaN)
  __m512 v = _mm512_mul_ps(x, inv);
  const __m512 frac = _mm512_sub_ps(v, _mm512_roundscale_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
  const __m512 gap = _mm512_abs_ps(_mm512_sub_ps(frac, _mm512_set1_ps(0.5f)));
  const __mmask16 near = _mm512_cmp_ps_mask(gap, _mm512_mul_ps(_mm512_abs_ps(v), _mm512_set1_ps(0x1p-22f)), _CMP_LE_OQ);
  if (near) v = _mm512_mask_div_ps(v, near, x, s);
  // Rounded, shifted and saturated; NaN gives `lo` (max returns its second operand), +-inf the ends.
  const __m512 q = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), z), lo), hi);
  const __m512i c = _mm512_cvtps_epi32(q);
  if constexpr (sizeof(Q) == 1) {
    if constexpr (Full) _mm_storeu_si128(reinterpret_cast<__m128i*>(yp), _mm512_cvtepi32_epi8(c));
    else _mm_mask_storeu_epi8(yp, m, _mm512_cvtepi32_epi8(c));
  } else {
    if constexpr (Full) _mm256_storeu_si256(reinterpret_cast<__m256i*>(yp), _mm512_cvtepi32_epi16(c));
    else _mm256_mask_storeu_epi16(yp, m, _mm512_cvtepi32_epi16(c));
  }
}
template <class Q>
JOULE_AVX512 void quantize_span_avx512(const float* xp, Q* yp, int64_t n, float s, float z, float clo, float chi) {
  const float inv = 1.f / s;
  if (!std::isnormal(inv) || !std::isnormal(s)) return quantize_span<Q>(xp, yp, n, s, z, clo, chi);
  const float lo = static_cast<float>(std::numeric_limits<Q>::min()), hi = static_cast<float>(std::numeric_limits<Q>::max());
  const __m512 vs = _mm512_set1_ps(s), vinv = _mm512_set1_ps(inv), vz = _mm512_set1_ps(z), vclo = _mm512_set1_ps(clo),
               vchi = _mm512_set1_ps(chi), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) quantize16<Q, true>(_mm512_loadu_ps(xp + i), yp + i, 0xFFFF, vs, vinv, vz, vclo, vchi, vlo, vhi);
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    quantize16<Q, false>(_mm512_maskz_loadu_ps(m, xp + i), yp + i, m, vs, vinv, vz, vclo, vchi, vlo, vhi);
  }
}

template <bool Mul>
JOULE_AVX512 JOULE_ALWAYS_INLINE __m512 gated16(__m512 a, __m512 g) {
  return Mul ? _mm512_mul_ps(a, g) : _mm512_add_ps(a, g);
}
// quant::quantize_gated_rows with AVX-512: the product (or sum) in a register, then quantize16.
template <class Q, bool Mul>
JOULE_AVX512 void quantize_gated_avx512(const float* x, const float* b, int64_t r0, int64_t rows, int64_t R, int64_t per,
                                        Q* y, float s, float z, float clo, float chi) {
  const float lo = static_cast<float>(std::numeric_limits<Q>::min()), hi = static_cast<float>(std::numeric_limits<Q>::max());
  const __m512 vs = _mm512_set1_ps(s), vinv = _mm512_set1_ps(1.f / s), vz = _mm512_set1_ps(z), vclo = _mm512_set1_ps(clo),
               vchi = _mm512_set1_ps(chi), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  int64_t g = r0 / per, left = per - r0 % per;  // B's row, rows before the next
  for (int64_t i = 0; i < rows; ++i) {
    const float* xr = x + i * R;
    const float* br = b + g * R;
    Q* yr = y + i * R;
    int64_t j = 0;
    for (; j + 16 <= R; j += 16)
      quantize16<Q, true>(gated16<Mul>(_mm512_loadu_ps(xr + j), _mm512_loadu_ps(br + j)), yr + j, 0xFFFF, vs, vinv, vz,
                          vclo, vchi, vlo, vhi);
    if (j < R) {
      const __mmask16 m = static_cast<__mmask16>((1u << (R - j)) - 1);
      quantize16<Q, false>(gated16<Mul>(_mm512_maskz_loadu_ps(m, xr + j), _mm512_maskz_loadu_ps(m, br + j)), yr + j, m,
                           vs, vinv, vz, vclo, vchi, vlo, vhi);
    }
    if (--left == 0) ++g, left = per;
  }
}

// The same 8 at a time with AVX2 (no FMA), for CPUs without AVX-512: the multiply by 1/s, the
// division where v lies near a half-integer, the same codes bit for bit; the last n % 8 values
// and scales whose reciprocal is not normal take the loop above.
template <class Q>
JOULE_AVX2 void quantize_span_avx2(const float* xp, Q* yp, int64_t n, float s, float z, float clo, float chi) {
  const float inv = 1.f / s;
  if (!std::isnormal(inv) || !std::isnormal(s)) return quantize_span<Q>(xp, yp, n, s, z, clo, chi);
  const float lo = static_cast<float>(std::numeric_limits<Q>::min()), hi = static_cast<float>(std::numeric_limits<Q>::max());
  const __m256 vs = _mm256_set1_ps(s), vinv = _mm256_set1_ps(inv), vz = _mm256_set1_ps(z), vclo = _mm256_set1_ps(clo),
               vchi = _mm256_set1_ps(chi), vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi),
               half = _mm256_set1_ps(0.5f), ulp22 = _mm256_set1_ps(0x1p-22f),
               abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_loadu_ps(xp + i);
    x = _mm256_min_ps(vchi, _mm256_max_ps(vclo, x));  // (NaN: max/min return their second operand, x)
    __m256 v = _mm256_mul_ps(x, vinv);
    const __m256 frac = _mm256_sub_ps(v, _mm256_round_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
    const __m256 gap = _mm256_and_ps(_mm256_sub_ps(frac, half), abs_mask);
    const __m256 near = _mm256_cmp_ps(gap, _mm256_mul_ps(_mm256_and_ps(v, abs_mask), ulp22), _CMP_LE_OQ);
    if (_mm256_movemask_ps(near)) v = _mm256_blendv_ps(v, _mm256_div_ps(x, vs), near);
    // Rounded, shifted and saturated; NaN gives `lo` (max returns its second operand), +-inf the ends.
    const __m256 q = _mm256_min_ps(
        _mm256_max_ps(_mm256_add_ps(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vz), vlo), vhi);
    const __m256i c = _mm256_cvtps_epi32(q);
    const __m128i c0 = _mm256_castsi256_si128(c), c1 = _mm256_extracti128_si256(c, 1);
    // In range already: the saturating packs only narrow.
    if constexpr (std::is_same_v<Q, uint8_t>) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(yp + i), _mm_packus_epi16(_mm_packs_epi32(c0, c1), _mm_setzero_si128()));
    } else if constexpr (std::is_same_v<Q, int8_t>) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(yp + i), _mm_packs_epi16(_mm_packs_epi32(c0, c1), _mm_setzero_si128()));
    } else if constexpr (std::is_same_v<Q, int16_t>) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(yp + i), _mm_packs_epi32(c0, c1));
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(yp + i), _mm_packus_epi32(c0, c1));
    }
  }
  quantize_span<Q>(xp + i, yp + i, n - i, s, z, clo, chi);
}

template <class Q>
inline __attribute__((always_inline)) void dequantize_span(const Q* xp, float* yp, int64_t n, float s, float z) {
  for (int64_t i = 0; i < n; ++i) yp[i] = (static_cast<float>(xp[i]) - z) * s;
}
template <class Q>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) void dequantize_span_avx512(const Q* xp, float* yp,
                                                                                         int64_t n, float s, float z) {
  dequantize_span<Q>(xp, yp, n, s, z);
}
template <class Q>
JOULE_AVX2 void dequantize_span_avx2(const Q* xp, float* yp, int64_t n, float s, float z) {
  dequantize_span<Q>(xp, yp, n, s, z);  // 8 wide, no FMA: the same values
}

template <class Q>
void quantize_to(const float* x, const AxisLayout& l, const std::vector<float>& scale,
                 const std::vector<int64_t>& zp, Q* y, float clo, float chi) {
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t ch = 0; ch < l.channels; ++ch) {
      const int64_t base = (o * l.channels + ch) * l.inner;
      quant::quantize_values<Q>(x + base, y + base, l.inner, scale[static_cast<size_t>(ch)],
                                static_cast<float>(zp[static_cast<size_t>(ch)]), clo, chi);
    }
}

// Quantizes float32 `x` into output 0 with the node's clamp.
void quantize_into(KernelContext& c, const Tensor& x, const AxisLayout& l, const std::vector<float>& s,
                   const std::vector<int64_t>& zp, DType out) {
  Tensor& y = c.output(0, out, x.shape());
  const bool joule = c.node.domain == "joule";
  const float clo = joule ? c.node.attr_float("clip_min", -std::numeric_limits<float>::infinity())
                          : -std::numeric_limits<float>::infinity();
  const float chi = joule ? c.node.attr_float("clip_max", std::numeric_limits<float>::infinity())
                          : std::numeric_limits<float>::infinity();
  visit_dtype(out, [&](auto tag) {
    using Q = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<Q> && sizeof(Q) <= 2 && !std::is_same_v<Q, bool>)
      quantize_to<Q>(x.data<float>(), l, s, zp, y.data<Q>(), clo, chi);
  });
}

void run_quantize(KernelContext& c) {
  const Tensor& x0 = c.in(0);
  JOULE_CHECK(is_floating(x0.dtype()), c.node.where() + ": input must be floating point, got " + x0.describe());
  const Tensor x = x0.dtype() == DType::Float32 ? x0 : x0.cast(DType::Float32);
  const Tensor& scale = c.in(1);
  check_zero_point(c, scale);
  std::vector<const ir::TensorType*> none;
  const DType out = c.has(2) ? c.in(2).dtype() : quant_output_type(c.node, none);
  if (!is_quant_int(out))
    fail_unsupported(c.node.where() + ": quantization to " + dtype_name(out) + " is not supported");
  const AxisLayout l = axis_layout(c, x.shape(), scale);
  const std::vector<float> s = scales_as_float(c, scale);
  std::vector<int64_t> zp(s.size(), 0);
  if (c.has(2))
    for (size_t i = 0; i < zp.size(); ++i) zp[i] = c.in(2).value_as_int(static_cast<int64_t>(i));
  const bool joule = c.node.domain == "joule";  // the clamp (and the Add or Mul) folded in
  if (joule && c.has(3)) {
    const Tensor& b = c.in(3);
    JOULE_CHECK(b.dtype() == DType::Float32 && c.in(0).dtype() == DType::Float32,
                c.node.where() + ": the fused " + c.node.attr_string("binary", "") + " needs float32 operands, got " +
                    x.describe() + " and " + b.describe());
    JOULE_CHECK(broadcast_shapes({x.shape(), b.shape()}, c.node) == x.shape(),
                c.node.where() + ": B " + b.describe() + " does not broadcast to the input " + x.describe());
    const bool mul = c.node.attr_string("binary", "") == "Mul";
    const Tensor v = mul ? broadcast_binary<float, float, float>(x, b, x.shape(), [](float p, float q) { return p * q; })
                         : broadcast_binary<float, float, float>(x, b, x.shape(), [](float p, float q) { return p + q; });
    return quantize_into(c, v, l, s, zp, out);
  }
  quantize_into(c, x, l, s, zp, out);
}

void infer_dequantize(InferContext& c) {
  c.out(0) = c.in(0);
  // Opset 19 lets scale be float16/bfloat16; the output takes the scale's type.
  c.out(0).dtype = c.in(1).dtype;
}

void run_dequantize(KernelContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& scale = c.in(1);
  check_zero_point(c, scale);
  if (!is_quant_int(x.dtype()) && x.dtype() != DType::Int32)
    fail_unsupported(c.node.where() + ": dequantization of " + dtype_name(x.dtype()) + " is not supported");
  const AxisLayout l = axis_layout(c, x.shape(), scale);
  const std::vector<float> s = scales_as_float(c, scale);
  Tensor y(DType::Float32, x.shape());
  float* py = y.data<float>();
  visit_dtype(x.dtype(), [&](auto tag) {
    using Q = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<Q> && sizeof(Q) <= 4 && !std::is_same_v<Q, bool>) {
      const Q* px = x.data<Q>();
      for (int64_t o = 0; o < l.outer; ++o)
        for (int64_t ch = 0; ch < l.channels; ++ch) {
          const float z = c.has(2) ? static_cast<float>(c.in(2).value_as_int(ch)) : 0.f;
          const float sc = s[static_cast<size_t>(ch)];
          const int64_t base = (o * l.channels + ch) * l.inner;
          if constexpr (sizeof(Q) == 4) {  // int32 codes: the difference in int64, as before
            for (int64_t i = 0; i < l.inner; ++i)
              py[base + i] = static_cast<float>(static_cast<int64_t>(px[base + i]) - static_cast<int64_t>(z)) * sc;
          } else {  // 8/16-bit codes: exact in float
            quant::dequantize_values<Q>(px + base, py + base, l.inner, sc, z);
          }
        }
    }
  });
  c.outputs[0] = scale.dtype() == DType::Float32 ? std::move(y) : y.cast(scale.dtype());
}

// DynamicQuantizeLinear: uint8, range always includes 0, scale = (max - min) / 255.
void infer_dynamic(InferContext& c) {
  c.out(0) = c.in(0);
  c.out(0).dtype = DType::UInt8;
  c.out(1) = ir::TensorType::of(DType::Float32, {});
  c.out(2) = ir::TensorType::of(DType::UInt8, {});
}

void run_dynamic(KernelContext& c) {
  const Tensor& x0 = c.in(0);
  JOULE_CHECK(is_floating(x0.dtype()), c.node.where() + ": input must be floating point, got " + x0.describe());
  const Tensor x = x0.dtype() == DType::Float32 ? x0 : x0.cast(DType::Float32);
  const float* px = x.data<float>();
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    lo = std::min(lo, px[i]);
    hi = std::max(hi, px[i]);
  }
  const float scale = hi > lo ? (hi - lo) / 255.0f : 1.0f;
  const float zp = std::min(255.0f, std::max(0.0f, std::nearbyint(0.0f - lo / scale)));
  Tensor y(DType::UInt8, x.shape());
  quant::quantize_values<uint8_t>(px, y.data<uint8_t>(), x.numel(), scale, zp, -std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::infinity());
  c.outputs[0] = std::move(y);
  if (c.outputs.size() > 1) c.outputs[1] = Tensor::scalar<float>(scale);
  if (c.outputs.size() > 2) c.outputs[2] = Tensor::scalar<uint8_t>(static_cast<uint8_t>(zp));
}

std::string check_joule_quant(const ir::Node& n, int64_t opset) {
  if (std::string why = check_quant(n, opset); !why.empty()) return why;
  const std::string op = n.attr_string("binary", "");
  if (n.has_input(3) != !op.empty()) return "input B and attribute binary go together";
  if (!op.empty() && op != "Add" && op != "Mul") return "binary must be Add or Mul, got '" + op + "'";
  if (!(n.attr_float("clip_min", -std::numeric_limits<float>::infinity()) <=
        n.attr_float("clip_max", std::numeric_limits<float>::infinity())))
    return "clip_min above clip_max";
  return "";
}

}  // namespace

namespace quant {

template <class Q>
void quantize_values(const float* x, Q* y, int64_t n, float s, float z, float lo, float hi) {
  if (cpu_features().avx512) quantize_span_avx512<Q>(x, y, n, s, z, lo, hi);
  else if (cpu_features().avx2_fma) quantize_span_avx2<Q>(x, y, n, s, z, lo, hi);
  else quantize_span<Q>(x, y, n, s, z, lo, hi);
}
template <class Q>
void dequantize_values(const Q* x, float* y, int64_t n, float s, float z) {
  if (cpu_features().avx512) dequantize_span_avx512<Q>(x, y, n, s, z);
  else if (cpu_features().avx2_fma) dequantize_span_avx2<Q>(x, y, n, s, z);
  else dequantize_span<Q>(x, y, n, s, z);
}
template <class Q>
bool quantize_gated_rows(const float* x, const float* b, char op, int64_t r0, int64_t rows, int64_t R, int64_t per, Q* y,
                         float s, float z, float lo, float hi) {
  if (!cpu_features().avx512 || !std::isnormal(1.f / s) || !std::isnormal(s)) return false;
  if (op == '*') quantize_gated_avx512<Q, true>(x, b, r0, rows, R, per, y, s, z, lo, hi);
  else quantize_gated_avx512<Q, false>(x, b, r0, rows, R, per, y, s, z, lo, hi);
  return true;
}
template bool quantize_gated_rows<int8_t>(const float*, const float*, char, int64_t, int64_t, int64_t, int64_t, int8_t*,
                                          float, float, float, float);
template bool quantize_gated_rows<uint8_t>(const float*, const float*, char, int64_t, int64_t, int64_t, int64_t, uint8_t*,
                                           float, float, float, float);
template void quantize_values<int8_t>(const float*, int8_t*, int64_t, float, float, float, float);
template void quantize_values<uint8_t>(const float*, uint8_t*, int64_t, float, float, float, float);
template void quantize_values<int16_t>(const float*, int16_t*, int64_t, float, float, float, float);
template void quantize_values<uint16_t>(const float*, uint16_t*, int64_t, float, float, float, float);
template void dequantize_values<int8_t>(const int8_t*, float*, int64_t, float, float);
template void dequantize_values<uint8_t>(const uint8_t*, float*, int64_t, float, float);
template void dequantize_values<int16_t>(const int16_t*, float*, int64_t, float, float);
template void dequantize_values<uint16_t>(const uint16_t*, float*, int64_t, float, float);

}  // namespace quant

extern const OpDef kOpJouleQuantizeLinear;
const OpDef kOpJouleQuantizeLinear{"QuantizeLinear", "joule", 2, 4, infer_quantize, run_quantize, nullptr, check_joule_quant};
extern const OpDef kOpQuantizeLinear;
const OpDef kOpQuantizeLinear{"QuantizeLinear", "", 2, 3, infer_quantize, run_quantize, nullptr, check_quant};
extern const OpDef kOpDequantizeLinear;
const OpDef kOpDequantizeLinear{"DequantizeLinear", "", 2, 3, infer_dequantize, run_dequantize, nullptr,
                                check_quant};
extern const OpDef kOpDynamicQuantizeLinear;
const OpDef kOpDynamicQuantizeLinear{"DynamicQuantizeLinear", "", 1, 1, infer_dynamic, run_dynamic};

}  // namespace joule::ops
