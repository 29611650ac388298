// joule.ActivationGrad(dY, X) -> dX = dY * f'(X) for the elementwise function named by the
// attribute `activation` (with `activation_params`):
//   Relu (x > 0), LeakyRelu [alpha] (x >= 0 ? 1 : alpha), Clip [min, max] (1 strictly inside),
//   Sigmoid, Tanh, Gelu (erf form), GeluTanh (tanh approximation), HardSigmoid [alpha, beta],
//   HardSwish, Elu [alpha], Softplus, Erf, Exp, Log, Sqrt, Abs, Reciprocal, Pow2Ceil (2^ceil(x),
//   straight through the ceiling: 2^ceil(x) ln 2).
// f' is computed from the forward input X, so every kind keeps the same inputs.
#include <cmath>

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

constexpr double kSqrt2 = 1.4142135623730951, kInvSqrt2Pi = 0.3989422804014327, kTwoOverSqrtPi = 1.1283791670955126;

enum class Kind { Relu, LeakyRelu, Clip, Sigmoid, Tanh, Gelu, GeluTanh, HardSigmoid, HardSwish, Elu, Softplus, Erf,
                  Exp, Log, Sqrt, Abs, Reciprocal, Pow2Ceil };

struct Spec {
  Kind kind;
  double a = 0, b = 0;
};

Spec read_spec(const ir::Node& n) {
  const std::string s = n.attr_string("activation", "");
  const std::vector<float> p = n.attr_floats("activation_params", {});
  auto need = [&](size_t k) {
    if (p.size() != k)
      fail(n.where() + ": activation " + s + " takes " + std::to_string(k) + " activation_params, got " +
           std::to_string(p.size()));
  };
  static const std::pair<const char*, Kind> kinds[] = {
      {"Relu", Kind::Relu}, {"LeakyRelu", Kind::LeakyRelu}, {"Clip", Kind::Clip}, {"Sigmoid", Kind::Sigmoid},
      {"Tanh", Kind::Tanh}, {"Gelu", Kind::Gelu}, {"GeluTanh", Kind::GeluTanh}, {"HardSigmoid", Kind::HardSigmoid},
      {"HardSwish", Kind::HardSwish}, {"Elu", Kind::Elu}, {"Softplus", Kind::Softplus}, {"Erf", Kind::Erf},
      {"Exp", Kind::Exp}, {"Log", Kind::Log}, {"Sqrt", Kind::Sqrt}, {"Abs", Kind::Abs},
      {"Reciprocal", Kind::Reciprocal}, {"Pow2Ceil", Kind::Pow2Ceil}};
  for (auto& [name, k] : kinds)
    if (s == name) {
      Spec sp{k};
      const size_t params = k == Kind::LeakyRelu || k == Kind::Elu ? 1 : k == Kind::Clip || k == Kind::HardSigmoid ? 2 : 0;
      need(params);
      if (params > 0) sp.a = p[0];
      if (params > 1) sp.b = p[1];
      return sp;
    }
  fail(n.where() + ": activation '" + s + "' has no gradient here");
}

template <class T, Kind K>
inline T deriv(T x, double a, double b) {
  if constexpr (K == Kind::Relu) return x > T(0) ? T(1) : T(0);
  if constexpr (K == Kind::LeakyRelu) return x >= T(0) ? T(1) : static_cast<T>(a);
  if constexpr (K == Kind::Clip) return x > static_cast<T>(a) && x < static_cast<T>(b) ? T(1) : T(0);
  if constexpr (K == Kind::Sigmoid) {
    const T s = T(1) / (T(1) + std::exp(-x));
    return s * (T(1) - s);
  }
  if constexpr (K == Kind::Tanh) {
    const T t = std::tanh(x);
    return T(1) - t * t;
  }
  if constexpr (K == Kind::Gelu)
    return static_cast<T>(0.5 * (1 + std::erf(x / kSqrt2)) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x));
  if constexpr (K == Kind::GeluTanh) {
    const double c = 0.7978845608028654, u = c * (x + 0.044715 * x * x * x), t = std::tanh(u);
    return static_cast<T>(0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x));
  }
  if constexpr (K == Kind::HardSigmoid) {
    const double v = a * x + b;
    return v > 0 && v < 1 ? static_cast<T>(a) : T(0);
  }
  if constexpr (K == Kind::HardSwish) return x < T(-3) ? T(0) : x > T(3) ? T(1) : x / T(3) + T(0.5);
  if constexpr (K == Kind::Elu) return x > T(0) ? T(1) : static_cast<T>(a * std::exp(x));
  if constexpr (K == Kind::Softplus) return T(1) / (T(1) + std::exp(-x));
  if constexpr (K == Kind::Erf) return static_cast<T>(kTwoOverSqrtPi * std::exp(-x * x));
  if constexpr (K == Kind::Exp) return std::exp(x);
  if constexpr (K == Kind::Log) return T(1) / x;
  if constexpr (K == Kind::Sqrt) return T(0.5) / std::sqrt(x);
  if constexpr (K == Kind::Abs) return x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0);
  if constexpr (K == Kind::Reciprocal) return T(-1) / (x * x);
  if constexpr (K == Kind::Pow2Ceil) return static_cast<T>(std::exp2(std::ceil(x)) * 0.6931471805599453);
  (void)b;
  return T(0);
}

template <class T, Kind K>
void apply(const T* dy, const T* x, T* dx, int64_t n, const Spec& s, ThreadPool* pool) {
  const double a = s.a, b = s.b;
  parallel_or_serial(pool, (n + 4095) / 4096, [&](int64_t begin, int64_t end) {
    const int64_t lo = begin * 4096, hi = std::min(n, end * 4096);
    for (int64_t i = lo; i < hi; ++i) dx[i] = dy[i] * deriv<T, K>(x[i], a, b);
  });
}

template <class T>
void dispatch(const T* dy, const T* x, T* dx, int64_t n, const Spec& s, ThreadPool* pool) {
  switch (s.kind) {
#define JOULE_CASE(k) \
  case Kind::k: return apply<T, Kind::k>(dy, x, dx, n, s, pool);
    JOULE_CASE(Relu) JOULE_CASE(LeakyRelu) JOULE_CASE(Clip) JOULE_CASE(Sigmoid) JOULE_CASE(Tanh) JOULE_CASE(Gelu)
    JOULE_CASE(GeluTanh) JOULE_CASE(HardSigmoid) JOULE_CASE(HardSwish) JOULE_CASE(Elu) JOULE_CASE(Softplus)
    JOULE_CASE(Erf) JOULE_CASE(Exp) JOULE_CASE(Log) JOULE_CASE(Sqrt) JOULE_CASE(Abs) JOULE_CASE(Reciprocal)
    JOULE_CASE(Pow2Ceil)
#undef JOULE_CASE
  }
}

void infer(InferContext& c) { infer_same_as_input(c, 1); }

void run(KernelContext& c) {
  const Tensor& dY = c.in(0);
  const Tensor& X = c.in(1);
  if (dY.shape() != X.shape() || dY.dtype() != X.dtype())
    fail(c.node.where() + ": dY " + dY.describe() + " and X " + X.describe() + " differ");
  const Spec s = read_spec(c.node);
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch<T>(dY.data<T>(), X.data<T>(), c.output(0, X.dtype(), X.shape()).template data<T>(), X.numel(), s,
                c.pool);
  });
}

std::string check(const ir::Node& n, int64_t) {
  try {
    read_spec(n);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

extern const OpDef kOpActivationGrad;
const OpDef kOpActivationGrad{"ActivationGrad", "joule", 2, 2, infer, run, nullptr, check};

}  // namespace joule::ops
