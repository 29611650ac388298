// Activation functions with attributes: Relu, Sigmoid, SiLU (joule), Tanh, HardSigmoid, HardSwish, LeakyRelu,
// Elu, Selu, Celu, Softplus, Mish, Softsign, ThresholdedRelu, Shrink. Float32/float64 (halves through
// float32); Relu (opset 14) also on signed integers, Shrink on every numeric dtype.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "joule/ops/elementwise_util.h"

namespace joule::ops {
namespace {

// F: constructed from the node (reads its attributes); `T operator()(T) const`;
// F::kIntegers: whether integer dtypes are accepted.
template <class F>
void run_activation(KernelContext& c) {
  if (run_half_as_float(c, run_activation<F>)) return;
  const F f(c.node);
  const Tensor& x = c.in(0);
  const DType t = x.dtype();
  if (!is_floating(t) && !F::kIntegers)
    fail_unsupported(c.node.where() + ": dtype " + dtype_name(t) + " is not supported");
  visit_numeric(t, c.node.where().c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (F::kIntegers || std::is_floating_point_v<T>)
      c.outputs[0] = map_unary<T, T>(x, [&f](T v) { return f(v); });
  });
}

struct Relu {
  static constexpr bool kIntegers = true;
  explicit Relu(const ir::Node&) {}
  template <class T>
  T operator()(T x) const {
    return x < T(0) ? T(0) : x;  // NaN stays NaN, as in ONNX Runtime and PyTorch
  }
};

template <class T>
T sigmoid_of(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);  // no overflow for very negative x
  return e / (T(1) + e);
}

// log(1 + exp(x)) without overflow for large x
template <class T>
T softplus_of(T x) {
  return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

struct Sigmoid {
  static constexpr bool kIntegers = false;
  explicit Sigmoid(const ir::Node&) {}
  template <class T>
  T operator()(T x) const {
    return sigmoid_of(x);
  }
};

struct SiLU {
  static constexpr bool kIntegers = false;
  explicit SiLU(const ir::Node&) {}
  template <class T>
  T operator()(T x) const {
    return x * sigmoid_of(x);
  }
};

struct Tanh {
  static constexpr bool kIntegers = false;
  explicit Tanh(const ir::Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::tanh(x);
  }
};

struct HardSigmoid {
  static constexpr bool kIntegers = false;
  float alpha, beta;
  explicit HardSigmoid(const ir::Node& n)
      : alpha(n.attr_float("alpha", 0.2f)), beta(n.attr_float("beta", 0.5f)) {}
  template <class T>
  T operator()(T x) const {
    const T v = T(alpha) * x + T(beta);
    return v < T(0) ? T(0) : (v > T(1) ? T(1) : v);  // NaN stays NaN
  }
};

struct HardSwish {
  static constexpr bool kIntegers = false;
  explicit HardSwish(const ir::Node&) {}
  template <class T>
  T operator()(T x) const {
    const T v = x / T(6) + T(0.5);
    return x * (v < T(0) ? T(0) : (v > T(1) ? T(1) : v));  // NaN stays NaN
  }
};

struct LeakyRelu {
  static constexpr bool kIntegers = false;
  float alpha;
  explicit LeakyRelu(const ir::Node& n) : alpha(n.attr_float("alpha", 0.01f)) {}
  template <class T>
  T operator()(T x) const {
    return x < T(0) ? T(alpha) * x : x;
  }
};

struct Elu {
  static constexpr bool kIntegers = false;
  float alpha;
  explicit Elu(const ir::Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <class T>
  T operator()(T x) const {
    return x < T(0) ? T(alpha) * std::expm1(x) : x;
  }
};

struct Selu {
  static constexpr bool kIntegers = false;
  float alpha, gamma;
  explicit Selu(const ir::Node& n)
      : alpha(n.attr_float("alpha", 1.67326319217681884765625f)),
        gamma(n.attr_float("gamma", 1.05070102214813232421875f)) {}
  template <class T>
  T operator()(T x) const {
    return x > T(0) ? T(gamma) * x : T(gamma) * T(alpha) * std::expm1(x);
  }
};

struct Celu {
  static constexpr bool kIntegers = false;
  float alpha;
  explicit Celu(const ir::Node& n) : alpha(n.attr_float("alpha", 1.0f)) {
    if (alpha == 0.f) fail(n.where() + ": alpha must not be 0");
  }
  template <class T>
  T operator()(T x) const {
    return x > T(0) ? x : T(alpha) * std::expm1(x / T(alpha));
  }
};

struct Softplus {
  static constexpr bool kIntegers = false;
  explicit Softplus(const ir::Node&) {}
  template <class T>
  T operator()(T x) const {
    return softplus_of(x);
  }
};

struct Mish {  // opset 18: x * tanh(softplus(x))
  static constexpr bool kIntegers = false;
  explicit Mish(const ir::Node&) {}
  template <class T>
  T operator()(T x) const {
    return x * std::tanh(softplus_of(x));
  }
};

struct Softsign {
  static constexpr bool kIntegers = false;
  explicit Softsign(const ir::Node&) {}
  template <class T>
  T operator()(T x) const {
    return x / (T(1) + std::fabs(x));
  }
};

struct ThresholdedRelu {
  static constexpr bool kIntegers = false;
  float alpha;
  explicit ThresholdedRelu(const ir::Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <class T>
  T operator()(T x) const {
    return x > T(alpha) ? x : T(0);
  }
};

struct Shrink {
  static constexpr bool kIntegers = true;
  double bias, lambd;
  explicit Shrink(const ir::Node& n)
      : bias(n.attr_float("bias", 0.0f)), lambd(n.attr_float("lambd", 0.5f)) {}
  template <class T>
  T operator()(T x) const {
    const double v = static_cast<double>(x);
    if (v < -lambd) return saturate_cast<T>(v + bias);
    if (v > lambd) return saturate_cast<T>(v - bias);
    return T(0);
  }
};

}  // namespace

#define JOULE_ACTIVATION(Name, cost) \
  extern const OpDef kOp##Name;      \
  const OpDef kOp##Name{#Name, "", 1, 1, infer_same_type, run_activation<Name>, cost};

JOULE_ACTIVATION(Relu, nullptr)
JOULE_ACTIVATION(Sigmoid, transcendental_cost)
JOULE_ACTIVATION(Tanh, transcendental_cost)
JOULE_ACTIVATION(HardSigmoid, nullptr)
JOULE_ACTIVATION(HardSwish, nullptr)
JOULE_ACTIVATION(LeakyRelu, nullptr)
JOULE_ACTIVATION(Elu, transcendental_cost)
JOULE_ACTIVATION(Selu, transcendental_cost)
JOULE_ACTIVATION(Celu, transcendental_cost)
JOULE_ACTIVATION(Softplus, transcendental_cost)
JOULE_ACTIVATION(Mish, transcendental_cost)
JOULE_ACTIVATION(Softsign, nullptr)
JOULE_ACTIVATION(ThresholdedRelu, nullptr)
JOULE_ACTIVATION(Shrink, nullptr)

#undef JOULE_ACTIVATION

// HardSwish in joule's domain: what fuse_swish emits for models below opset 14.
extern const OpDef kOpJouleHardSwish;
const OpDef kOpJouleHardSwish{"HardSwish", "joule", 1, 1, infer_same_type, run_activation<HardSwish>, nullptr};
// SiLU (Swish), x * sigmoid(x), in joule's domain: what fuse_swish makes of Mul(x, Sigmoid(x)).
extern const OpDef kOpJouleSiLU;
const OpDef kOpJouleSiLU{"SiLU", "joule", 1, 1, infer_same_type, run_activation<SiLU>, transcendental_cost};

}  // namespace joule::ops
