// The "simd" algorithm of the unary op class: float32 activations and unary math as one
// branch-free loop that GCC vectorises, compiled twice (baseline and AVX-512, chosen by
// core/cpu_features), split over the thread pool when the tensor is large enough, written into
// the planned output buffer. Transcendentals use ops/vec_math.h (errors stated there and tested
// against float64 in tests/ops/test_vec_math.cpp); NaN and Inf propagate as in ONNX Runtime and
// PyTorch. The ops' libm kernels stay the reference.
#include <array>
#include <limits>
#include <utility>

#include "joule/core/cpu_features.h"
#include "joule/core/error.h"
#include "joule/kernels/algorithm.h"
#include "joule/kernels/eltwise/eltwise.h"
#include "joule/ops/vec_math.h"
#include "joule/ops/vec_sigmoid.h"

namespace joule::kernels {
namespace {

namespace vec = ops::vec;

enum Fn : int {
  kRelu, kLeakyRelu, kSigmoid, kSiLU, kTanh, kHardSigmoid, kHardSwish, kElu, kSelu, kCelu, kSoftplus,
  kSoftsign, kMish, kExp, kLog, kErf, kSqrt, kReciprocal, kAbs, kNeg, kClip, kGelu, kGeluTanh, kCount
};

// a, b: the op's parameters (alpha/beta, min/max, ...).
template <int F>
JOULE_ALWAYS_INLINE float apply(float x, float a, float b) {
  if constexpr (F == kRelu) return x < 0.f ? 0.f : x;
  if constexpr (F == kLeakyRelu) return x < 0.f ? a * x : x;
  if constexpr (F == kSigmoid) return vec::sigmoid(x);
  if constexpr (F == kSiLU) return x * vec::sigmoid(x);
  if constexpr (F == kTanh) return vec::tanh(x);
  if constexpr (F == kHardSigmoid || F == kHardSwish) {
    const float v = F == kHardSwish ? x / 6.f + 0.5f : a * x + b;  // x / 6 as the reference rounds it
    const float h = v < 0.f ? 0.f : (v > 1.f ? 1.f : v);
    return F == kHardSwish ? x * h : h;
  }
  if constexpr (F == kElu) return x < 0.f ? a * vec::expm1(x) : x;
  if constexpr (F == kSelu) return x > 0.f ? b * x : b * a * vec::expm1(x);
  if constexpr (F == kCelu) return x > 0.f ? x : a * vec::expm1(x * b);  // b = 1 / alpha
  if constexpr (F == kSoftplus) return vec::softplus(x);
  if constexpr (F == kSoftsign) return x / (1.f + (x < 0.f ? -x : x));
  if constexpr (F == kMish) return x * vec::tanh(vec::softplus(x));
  if constexpr (F == kExp) return vec::exp_full(x);
  if constexpr (F == kLog) return vec::log(x);
  if constexpr (F == kErf) return vec::erf(x);
  if constexpr (F == kSqrt) return __builtin_sqrtf(x);
  if constexpr (F == kReciprocal) return 1.f / x;
  if constexpr (F == kAbs) return x < 0.f ? -x : x;
  if constexpr (F == kNeg) return -x;
  if constexpr (F == kClip) return x < a ? a : (x > b ? b : x);
  if constexpr (F == kGelu) return vec::gelu_erf(x);
  if constexpr (F == kGeluTanh) return vec::gelu_tanh(x);
  return x;
}

using Span = void (*)(const float*, float*, int64_t, float, float);

template <int F>
JOULE_ALWAYS_INLINE void span_body(const float* x, float* y, int64_t n, float a, float b) {
  for (int64_t i = 0; i < n; ++i) y[i] = apply<F>(x[i], a, b);
}
template <int F>
void span_base(const float* x, float* y, int64_t n, float a, float b) {
  span_body<F>(x, y, n, a, b);
}
template <int F>
JOULE_AVX2 void span_avx2(const float* x, float* y, int64_t n, float a, float b) {
  if constexpr (F == kSigmoid || F == kSiLU)
    vec::sigmoid_avx2(x, y, n, F == kSiLU);
  else if constexpr (F == kGelu)
    vec::gelu_avx2(x, y, n);
  else
    span_body<F>(x, y, n, a, b);
}
template <int F>
JOULE_AVX512 void span_avx512(const float* x, float* y, int64_t n, float a, float b) {
  if constexpr (F == kSigmoid || F == kSiLU)
    vec::sigmoid_avx512(x, y, n, F == kSiLU);  // intrinsics: twice the speed of the vectorised loop
  else
    span_body<F>(x, y, n, a, b);
}

template <size_t... I>
std::array<Span, kCount> spans(bool avx512, bool avx2, std::index_sequence<I...>) {
  return {(avx512 ? &span_avx512<static_cast<int>(I)>
                  : avx2 ? &span_avx2<static_cast<int>(I)> : &span_base<static_cast<int>(I)>)...};
}

Span span_of(Fn f) {
  static const std::array<Span, kCount> table = spans(cpu_features().avx512, cpu_features().avx2_fma,
                                                     std::make_index_sequence<kCount>());
  return table[f];
}

struct Op {
  Fn fn = kCount;
  float a = 0, b = 0;
};

float constant_scalar(const NodeView& v, size_t i, float def, bool* ok) {
  if (!v.has(i)) return def;
  const Tensor* t = v.constant(i);
  if (!t || t->numel() != 1 || t->dtype() != DType::Float32) {
    *ok = false;
    return def;
  }
  return t->data<float>()[0];
}

}  // namespace

bool clip_bounds(const NodeView& v, float* lo, float* hi) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const ir::Node& n = v.node;
  if (n.has_attr("min") || n.has_attr("max")) {
    *lo = n.attr_float("min", -kInf);
    *hi = n.attr_float("max", kInf);
    return true;
  }
  bool ok = true;
  *lo = constant_scalar(v, 1, -kInf, &ok);
  *hi = constant_scalar(v, 2, kInf, &ok);
  return ok;
}

namespace {

// The function and parameters of node `v`; fn == kCount when this algorithm has none for it.
Op op_of(const NodeView& v) {
  const ir::Node& n = v.node;
  const std::string& t = n.op_type;
  const bool onnx = n.domain.empty() || n.domain == "ai.onnx", joule = n.domain == "joule";
  if (joule) {
    if (t == "SiLU") return {kSiLU};
    if (t == "HardSwish") return {kHardSwish};
    if (t == "Gelu") return {n.attr_string("approximate", "none") == "tanh" ? kGeluTanh : kGelu};
    return {};
  }
  if (!onnx) return {};
  static const std::pair<const char*, Fn> plain[] = {
      {"Relu", kRelu}, {"Sigmoid", kSigmoid}, {"Tanh", kTanh}, {"Softplus", kSoftplus}, {"Softsign", kSoftsign},
      {"Mish", kMish}, {"Exp", kExp}, {"Log", kLog}, {"Erf", kErf}, {"Sqrt", kSqrt}, {"Reciprocal", kReciprocal},
      {"Abs", kAbs}, {"Neg", kNeg}};
  for (auto& [name, fn] : plain)
    if (t == name) return {fn};
  if (t == "LeakyRelu") return {kLeakyRelu, n.attr_float("alpha", 0.01f)};
  if (t == "HardSigmoid") return {kHardSigmoid, n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)};
  if (t == "HardSwish") return {kHardSwish};
  if (t == "Elu") return {kElu, n.attr_float("alpha", 1.f)};
  if (t == "Selu") return {kSelu, n.attr_float("alpha", 1.67326319217681884765625f), n.attr_float("gamma", 1.05070102214813232421875f)};
  if (t == "Celu") {
    const float alpha = n.attr_float("alpha", 1.f);
    return alpha == 0.f ? Op{} : Op{kCelu, alpha, 1.f / alpha};
  }
  if (t == "Gelu") {
    const std::string approx = n.attr_string("approximate", "none");
    return approx == "tanh" ? Op{kGeluTanh} : approx == "none" ? Op{kGelu} : Op{};
  }
  if (t == "Clip") {
    float lo = 0, hi = 0;
    return clip_bounds(v, &lo, &hi) ? Op{kClip, lo, hi} : Op{};
  }
  return {};
}

class UnaryKernel final : public Kernel {
 public:
  explicit UnaryKernel(Op op) : op_(op), span_(span_of(op.fn)) {}
  void run(ops::KernelContext& k) const override {
    const Tensor& x = k.in(0);
    if (x.dtype() != DType::Float32) fail(k.node.where() + ": the simd kernel was prepared for float32, got " + x.describe());
    Tensor& y = k.output(0, DType::Float32, x.shape());
    const float* px = x.data<float>();
    float* py = y.data<float>();
    split_items(k.pool, x.numel(), 1, [&](int64_t b, int64_t e) { span_(px + b, py + b, e - b, op_.a, op_.b); });
  }

 private:
  Op op_;
  Span span_;
};

std::string supports(const NodeView& v) {
  if (op_of(v).fn == kCount) return "not a float32 op with constant parameters it knows";
  if (!v.has(0) || v.in_types[0]->dtype != DType::Float32) return "input is not float32";
  return "";
}

double estimate_ms(const NodeView& v) { return static_cast<double>(planned_numel(v, 0)) * 1e-6; }

std::unique_ptr<Kernel> prepare(const NodeView& v) { return std::make_unique<UnaryKernel>(op_of(v)); }

}  // namespace

bool is_unary_eltwise(const ir::Node& n) {
  return op_of(NodeView{n, {}, {}, {}}).fn != kCount;  // (Clip's bounds: checked in supports)
}

extern const Algorithm kUnarySimd;
const Algorithm kUnarySimd{"unary", "simd",
                           "float32 activations and unary math as one vectorised loop (AVX-512 or baseline), threaded",
                           supports, estimate_ms, prepare};

}  // namespace joule::kernels
