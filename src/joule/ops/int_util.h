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
// ("", Relu, LeakyRelu, Clip) with `activation_params` (LeakyRelu: [alpha]; Clip: [min, max]).
struct Activation {
  std::string kind;
  std::vector<float> p;
  explicit Activation(const ir::Node& n)
      : kind(n.attr_string("activation", "")), p(n.attr_floats("activation_params", {})) {}
  float operator()(float v) const {
    if (kind == "Relu") return v > 0.f ? v : 0.f;
    if (kind == "LeakyRelu") return v >= 0.f ? v : v * p[0];
    if (kind == "Clip") return std::min(std::max(v, p[0]), p[1]);
    return v;
  }
  // "" when valid, else the reason.
  std::string check() const {
    const size_t want = kind == "Clip" ? 2 : kind == "LeakyRelu" ? 1 : 0;
    if (!kind.empty() && kind != "Relu" && kind != "LeakyRelu" && kind != "Clip") return "activation '" + kind + "'";
    if (p.size() != want)
      return "activation_params has " + std::to_string(p.size()) + " values, " + kind + " needs " + std::to_string(want);
    return "";
  }
};

// The joule QConv / QMatMul epilogue over the exact accumulator `acc` (channel of element i =
// (i / inner) % channels): real = acc * xs * ws[ch] + bias[ch]; real = act(real); output real
// (float32), or QuantizeLinear(real, ys, yzp) in y_zero_point's type when input 8 is given.
// Inputs: 1 x_scale, 4 w_scale, 6 bias (optional), 7 y_scale, 8 y_zero_point (optional).
inline void q_epilogue(KernelContext& c, const Tensor& acc, int64_t channels, int64_t inner) {
  const double xs = param(c, 1, 1, 1, "x_scale")[0];
  const std::vector<double> ws = param(c, 4, channels, 1, "w_scale");
  std::vector<float> scale(static_cast<size_t>(channels)), bias(static_cast<size_t>(channels), 0.f);
  for (int64_t k = 0; k < channels; ++k)
    scale[static_cast<size_t>(k)] =
        static_cast<float>(xs) * static_cast<float>(ws[ws.size() > 1 ? static_cast<size_t>(k) : 0]);
  if (c.has(6)) {
    const Tensor& b = c.in(6);
    JOULE_CHECK(b.dtype() == DType::Float32 && b.numel() == channels,
                c.node.where() + ": bias " + b.describe() + " must be float32 with " + std::to_string(channels) + " values");
    for (int64_t k = 0; k < channels; ++k) bias[static_cast<size_t>(k)] = b.data<float>()[k];
  }
  const Activation act(c.node);
  const double* a = acc.data<double>();
  auto real = [&](int64_t i) {
    const size_t ch = static_cast<size_t>((i / inner) % channels);
    return act(static_cast<float>(a[i]) * scale[ch] + bias[ch]);
  };
  if (!c.has(7)) {
    Tensor y(DType::Float32, acc.shape());
    for (int64_t i = 0; i < acc.numel(); ++i) y.data<float>()[i] = real(i);
    c.outputs[0] = std::move(y);
    return;
  }
  const float ys = static_cast<float>(param(c, 7, 1, 1, "y_scale")[0]);
  const float yzp = static_cast<float>(param(c, 8, 1, 0, "y_zero_point")[0]);
  const DType t = c.has(8) ? c.in(8).dtype() : DType::UInt8;
  JOULE_CHECK(is_code_type(t), c.node.where() + ": y_zero_point must be uint8 or int8");
  c.outputs[0] = to_codes(t, acc.shape(), yzp, [&](int64_t i) { return real(i) / ys; });
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
