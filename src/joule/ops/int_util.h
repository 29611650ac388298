#pragma once
// Shared by the integer ops (ConvInteger, QLinearConv, MatMulInteger, QLinearMatMul and joule's
// QConv / QMatMul): zero-point-centred codes, exact integer accumulation through the float64
// reference kernels of Conv and MatMul (every partial sum is an integer far below 2^53, so the
// result is exact whatever the summation order), the float epilogue and requantization.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "joule/ops/nn_util.h"
#include "joule/ops/vec_math.h"

#define JOULE_INLINE_EPILOGUE inline __attribute__((always_inline))

namespace joule::ops::qint {

inline bool is_code_type(DType t) { return t == DType::Int8 || t == DType::UInt8; }

// Input i as a per-tensor (one element) or per-channel (`channels` elements, 1-D) parameter;
// {def} when absent.
inline std::vector<double> param(const KernelContext& c, size_t i, int64_t channels, double def, const char* what) {
  if (!c.has(i)) return {def};
  const Tensor& t = c.in(i);
  if (t.numel() == 1 && t.rank() <= 1) return {t.value_as_double(0)};
  JOULE_CHECK(t.rank() == 1 && t.numel() == channels,
              c.node.where() + ": " + what + " " + t.describe() + " is neither a scalar nor one value per each of " +
                  std::to_string(channels) + " channels");
  std::vector<double> v(static_cast<size_t>(channels));
  for (int64_t k = 0; k < channels; ++k) v[static_cast<size_t>(k)] = t.value_as_double(k);
  return v;
}

// codes - zp as float64; zp has one value or one per index of dim `axis` of the codes.
inline Tensor centered(const KernelContext& c, const Tensor& codes, const std::vector<double>& zp, int axis,
                       const char* what) {
  JOULE_CHECK(is_code_type(codes.dtype()),
              c.node.where() + ": " + what + " must be uint8 or int8 codes, got " + codes.describe());
  Tensor r(DType::Float64, codes.shape());
  double* p = r.data<double>();
  int64_t channels = 1, inner = codes.numel();
  if (zp.size() > 1) {
    const int a = axis < 0 ? axis + codes.rank() : axis;
    channels = codes.dim(a);
    inner = 1;
    for (int k = a + 1; k < codes.rank(); ++k) inner *= codes.dim(k);
  }
  for (int64_t i = 0; i < codes.numel(); ++i)
    p[i] = static_cast<double>(codes.value_as_int(i)) - zp[static_cast<size_t>(zp.size() > 1 ? (i / inner) % channels : 0)];
  return r;
}

// The float64 reference of `op` ("Conv" or "MatMul", with the node's attributes) on centred
// tensors: the exact integer accumulation, as doubles.
inline Tensor reference_acc(const KernelContext& c, const char* op, const Tensor& a, const Tensor& b) {
  KernelContext k{c.node, c.opset, {&a, &b}, {}, c.pool};
  k.outputs.resize(1);
  find_op("", op)->run(k);
  return k.outputs[0];
}

// Codes of type `t` (uint8/int8) of shape `shape`: saturate(round_half_even(f(i)) + zp), where
// f(i) is element i already divided by its scale.
template <class F>
Tensor to_codes(DType t, const Shape& shape, float zp, const F& f) {
  Tensor y(t, shape);
  const int64_t n = y.numel();
  auto fill = [&](auto* p) {
    using Q = std::remove_pointer_t<decltype(p)>;
    const float lo = static_cast<float>(std::numeric_limits<Q>::min());
    const float hi = static_cast<float>(std::numeric_limits<Q>::max());
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<Q>(std::min(hi, std::max(lo, std::nearbyint(f(i)) + zp)));
  };
  if (t == DType::UInt8)
    fill(y.data<uint8_t>());
  else
    fill(y.data<int8_t>());
  return y;
}

// The fused activation of QConv / QMatMul, named like FusedConv's epilogue: `activation`
// ("", Relu, LeakyRelu, Clip, SiLU, HardSwish) with `activation_params` (LeakyRelu: [alpha];
// Clip: [min, max]; none for the others).
struct Activation {
  std::string kind;
  std::vector<float> p;
  explicit Activation(const ir::Node& n)
      : kind(n.attr_string("activation", "")), p(n.attr_floats("activation_params", {})) {}
  // "" when valid, else the reason.
  std::string check() const {
    const size_t want = kind == "Clip" ? 2 : kind == "LeakyRelu" ? 1 : 0;
    if (!kind.empty() && kind != "Relu" && kind != "LeakyRelu" && kind != "Clip" && kind != "SiLU" &&
        kind != "HardSwish")
      return "activation '" + kind + "'";
    if (p.size() != want)
      return "activation_params has " + std::to_string(p.size()) + " values, " + kind + " needs " + std::to_string(want);
    return "";
  }
};

// SiLU in the integer plan's epilogue, v s(v) with s(v) = 1 / (1 + e^-v): one exactly specified
// sequence of float32 operations, so that this scalar form and the vector forms of the int8
// kernels (kernels/int8/requant.cpp, AVX-512 and AVX2) give the same bits and the simulation
// equals the integer kernels. e = e^t for t = max(-|v|, -80): n = round_half_even(t log2 e),
// r = t - n ln2 (two fused steps), e^r by the degree-5 polynomial of ops/vec_sigmoid.cpp (fused
// multiply-adds), times 2^n (exact: n >= -116 keeps every value normal); then 1 / (1 + e) by an
// IEEE division, times e where v < 0, times v. Relative error below 4e-7 against float64 where
// v >= -80; below that |v s(v)| < 2e-33 (it is then a multiple of e^-80, not e^v).
JOULE_INLINE_EPILOGUE float silu(float v) {
  float t = v < 0.f ? v : -v;  // -|v|
  t = -80.f > t ? -80.f : t;   // (NaN stays, as vmaxps(-80, t) keeps it)
  const float n = std::nearbyint(t * vec::kLog2e);
  float r = std::fma(-n, vec::kLn2Hi, t);
  r = std::fma(-n, vec::kLn2Lo, r);
  float p = vec::kSigmoidExpPoly[0];
  for (int k = 1; k < 6; ++k) p = std::fma(p, r, vec::kSigmoidExpPoly[k]);
  const float e = std::ldexp(p, n == n ? static_cast<int>(n) : 0);  // (NaN: p is NaN already)
  float s = 1.f / (e + 1.f);
  if (v < 0.f) s = s * e;
  return v * s;
}

// The epilogue of joule's QConv / QMatMul as the integer plan computes it — the one description
// the oneDNN int8 kernels (kernels/int8), the emulated kernels `--int8 simulated` runs and the
// reference kernels below all follow, so that they agree code for code:
//   v = (float(acc) + bias_acc[c]) * scale[c]     scale = x_scale * w_scale[c] (/ y_scale)
//                                                 bias_acc = bias[c] / (x_scale * w_scale[c])
//   v = act(v)                                    Clip's bounds divided by y_scale
//   y = v (float32), or saturate(round_half_even(v + y_zero_point)) (uint8 / int8 codes)
// SiLU (silu above) and HardSwish (v clamp(v/6 + 1/2, 0, 1)) do not commute with the scale:
// for them scale = x_scale * w_scale[c], and the activated value is multiplied by post = 1/y_scale.
// (oneDNN's order: bias in accumulator units, output scales, eltwise post-ops, the zero point as
// a linear post-op — with SiLU/HardSwish, post and the zero point together — then rounding and
// saturation. oneDNN's own exp and division inside its swish may differ from silu in the last
// bits, so a SiLU layer's codes may differ by one step on rare elements; the others are
// bit-exact. joule's own kernels and the emulated ones share kernels/int8/requant.h.)
struct Requant {
  std::vector<float> scale, bias_acc;  // per channel; bias_acc empty without a bias
  int act = 0;                         // 0 none, 1 Relu, 2 LeakyRelu, 3 Clip, 4 SiLU, 5 HardSwish
  float alpha = 0, beta = 0;           // LeakyRelu slope; Clip bounds (in output units)
  float post = 1;                      // SiLU / HardSwish: 1 / y_scale after the activation
  DType out = DType::Float32;          // Float32, UInt8 or Int8
  float zero_point = 0;

  // "" and filled, or the reason the parameters do not make an integer epilogue.
  static std::string make(double x_scale, const std::vector<double>& w_scale, const float* bias, int64_t channels,
                          bool requantized, double y_scale, double y_zero_point, DType out, const std::string& kind,
                          const std::vector<float>& params, Requant* r) {
    const size_t ch = static_cast<size_t>(channels);
    const float ys = requantized ? static_cast<float>(y_scale) : 1.f;
    if (requantized && !(ys > 0)) return "y_scale is not positive";
    r->act = kind.empty()            ? 0
             : kind == "Relu"        ? 1
             : kind == "LeakyRelu"   ? 2
             : kind == "Clip"        ? 3
             : kind == "SiLU"        ? 4
             : kind == "HardSwish"   ? 5
                                     : -1;
    if (r->act < 0 || params.size() != (r->act == 3 ? 2u : r->act == 2 ? 1u : 0u)) return "activation '" + kind + "'";
    const bool commutes = r->act < 4;  // with a positive scale
    r->post = commutes ? 1.f : 1.f / ys;
    r->scale.assign(ch, 0.f);
    r->bias_acc.assign(bias ? ch : 0, 0.f);
    for (size_t k = 0; k < ch; ++k) {
      const float s = static_cast<float>(x_scale) * static_cast<float>(w_scale[w_scale.size() > 1 ? k : 0]);
      if (!(s > 0)) return "a scale is not positive";
      r->scale[k] = commutes ? s / ys : s;
      if (bias) r->bias_acc[k] = bias[k] / s;
    }
    if (r->act == 2) r->alpha = params[0];
    if (r->act == 3) r->alpha = params[0] / ys, r->beta = params[1] / ys;
    r->out = requantized ? out : DType::Float32;
    r->zero_point = static_cast<float>(y_zero_point);
    return "";
  }
  // v for accumulator `acc` of channel `c`, activated (before the zero point).
  JOULE_INLINE_EPILOGUE float value(float acc, size_t c) const {
    const float b = bias_acc.empty() ? 0.f : bias_acc[c];
    switch (act) {
      case 1: return activated<1>(acc, b, scale[c]);
      case 2: return activated<2>(acc, b, scale[c]);
      case 3: return activated<3>(acc, b, scale[c]);
      case 4: return activated<4>(acc, b, scale[c]);
      case 5: return activated<5>(acc, b, scale[c]);
      default: return activated<0>(acc, b, scale[c]);
    }
  }
  // The same with the activation a template argument and the channel's bias and scale given
  // (a bias of 0 where there is none: acc + 0 is acc), for loops that vectorise.
  template <int Act>
  JOULE_INLINE_EPILOGUE float activated(float acc, float bias, float s) const {
    float v = (acc + bias) * s;
    if constexpr (Act == 1) v = v > 0.f ? v : 0.f;
    if constexpr (Act == 2) v = v > 0.f ? v : v * alpha;
    if constexpr (Act == 3) v = v < alpha ? alpha : (v > beta ? beta : v);
    if constexpr (Act == 4) v = silu(v) * post;
    if constexpr (Act == 5) {
      float g = v / 6.f + 0.5f;
      g = g < 0.f ? 0.f : (g > 1.f ? 1.f : g);
      v = v * g * post;
    }
    return v;
  }
};

// Codes of type Q: saturate(round_half_even(v + zp)). Adding and subtracting 1.5 * 2^23 rounds
// to nearest, ties to even, without libm (v is first clamped to one past the code range). One
// select per bound (no nested ones), so that GCC vectorises loops of it.
template <class Q>
JOULE_INLINE_EPILOGUE Q requant_code(float v, float zp) {
  constexpr float kRound = 12582912.0f;
  const float lo = static_cast<float>(std::numeric_limits<Q>::min());
  const float hi = static_cast<float>(std::numeric_limits<Q>::max());
  v += zp;
  v = v >= lo - 1 ? v : lo - 1;  // NaN ends at lo
  v = v > hi + 1 ? hi + 1 : v;
  float q = (v + kRound) - kRound;
  q = q < lo ? lo : q;
  q = q > hi ? hi : q;
  return static_cast<Q>(static_cast<int32_t>(q));
}

// The Requant of a QConv / QMatMul node being run (inputs 1 x_scale, 4 w_scale, 6 bias, 7 y_scale,
// 8 y_zero_point; attributes activation / activation_params).
inline Requant requant_of(const KernelContext& c, int64_t channels) {
  const std::vector<double> ws = param(c, 4, channels, 1, "w_scale");
  const float* bias = nullptr;
  if (c.has(6)) {
    const Tensor& b = c.in(6);
    JOULE_CHECK(b.dtype() == DType::Float32 && b.numel() == channels,
                c.node.where() + ": bias " + b.describe() + " must be float32 with " + std::to_string(channels) + " values");
    bias = b.data<float>();
  }
  const DType t = c.has(8) ? c.in(8).dtype() : DType::UInt8;
  JOULE_CHECK(!c.has(7) || is_code_type(t), c.node.where() + ": y_zero_point must be uint8 or int8");
  const Activation act(c.node);
  Requant r;
  const std::string why = Requant::make(param(c, 1, 1, 1, "x_scale")[0], ws, bias, channels, c.has(7),
                                        c.has(7) ? param(c, 7, 1, 1, "y_scale")[0] : 1.0,
                                        c.has(7) ? param(c, 8, 1, 0, "y_zero_point")[0] : 0.0, t, act.kind, act.p, &r);
  JOULE_CHECK(why.empty(), c.node.where() + ": " + why);
  return r;
}

// The reference epilogue over the exact accumulator `acc` (float64; channel of element i =
// (i / inner) % channels), as Requant describes it.
inline void q_epilogue(KernelContext& c, const Tensor& acc, int64_t channels, int64_t inner) {
  const Requant r = requant_of(c, channels);
  const double* a = acc.data<double>();
  Tensor y(r.out, acc.shape());
  for (int64_t i = 0; i < acc.numel(); ++i) {
    const float v = r.value(static_cast<float>(a[i]), static_cast<size_t>((i / inner) % channels));
    if (r.out == DType::UInt8) y.data<uint8_t>()[i] = requant_code<uint8_t>(v, r.zero_point);
    else if (r.out == DType::Int8) y.data<int8_t>()[i] = requant_code<int8_t>(v, r.zero_point);
    else y.data<float>()[i] = v;
  }
  c.outputs[0] = std::move(y);
}

// Output dtype of QConv / QMatMul from their input types.
inline DType q_output_type(const InferContext& c) {
  if (!c.has(7)) return DType::Float32;
  return c.has(8) ? c.in(8).dtype : DType::UInt8;
}

// Runs another op's inference (Conv, MatMul) on inputs `x` and `w` of this node.
inline void infer_as(InferContext& c, const char* op, size_t x, size_t w, DType out) {
  const OpDef* d = find_op("", op);
  InferContext k{c.node, c.opset, {&c.in(x), &c.in(w)}, {nullptr, nullptr}, {}, {}};
  k.output_types.resize(1);
  k.output_values.resize(1);
  d->infer(k);
  c.out(0) = k.output_types[0];
  c.out(0).dtype = out;
}

// MACs of a convolution with output shape `y` and weight shape `w`, and of a matmul.
inline Cost conv_cost(const CostContext& c, size_t w) {
  Cost r;
  if (c.in.size() > w && c.in[w].size() >= 1 && !c.out.empty() && c.in[w][0] > 0) {
    r.macs = nn::numel_d(c.out[0]) * nn::numel_d(c.in[w]) / static_cast<double>(c.in[w][0]);
    r.flops = 2 * r.macs;
  }
  r.bytes = io_bytes(c);
  return r;
}
inline Cost matmul_cost(const CostContext& c, size_t a) {
  Cost r;
  if (c.in.size() > a && !c.in[a].empty() && !c.out.empty()) {
    r.macs = nn::numel_d(c.out[0]) * static_cast<double>(c.in[a].back());
    r.flops = 2 * r.macs;
  }
  r.bytes = io_bytes(c);
  return r;
}

}  // namespace joule::ops::qint
