// Unary math ops: a table of elementwise functions (Abs, Exp, Sin, Round, IsNaN, Not, ...).
// Floating point kernels run on float32/float64 (float16/bfloat16 through float32); Abs, Neg
// and Sign also on integer dtypes.
#include <cmath>
#include <limits>
#include <type_traits>

#include "joule/ops/elementwise_util.h"

namespace joule::ops {
namespace {

[[noreturn]] void unsupported_dtype(const KernelContext& c, DType t) {
  fail_unsupported(c.node.where() + ": dtype " + dtype_name(t) + " is not supported");
}

// out = F::apply(x) for float32/float64 (halves through float32).
template <class F>
void run_float(KernelContext& c) {
  if (run_half_as_float(c, run_float<F>)) return;
  const Tensor& x = c.in(0);
  switch (x.dtype()) {
    case DType::Float32:
      c.outputs[0] = map_unary<float, float>(x, [](float v) { return F::apply(v); });
      return;
    case DType::Float64:
      c.outputs[0] = map_unary<double, double>(x, [](double v) { return F::apply(v); });
      return;
    default:
      unsupported_dtype(c, x.dtype());
  }
}

// Same for every numeric dtype (floats and integers).
template <class F>
void run_numeric(KernelContext& c) {
  if (run_half_as_float(c, run_numeric<F>)) return;
  const Tensor& x = c.in(0);
  visit_numeric(x.dtype(), c.node.where().c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    c.outputs[0] = map_unary<T, T>(x, [](T v) { return F::apply(v); });
  });
}

void infer_bool(InferContext& c) {
  c.out(0) = c.in(0);
  c.out(0).dtype = DType::Bool;
}

template <class T>
T sign_of(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(x)) return x;
  }
  if constexpr (std::is_unsigned_v<T>)
    return x > 0 ? T(1) : T(0);
  else
    return x > 0 ? T(1) : (x < 0 ? T(-1) : T(0));
}

template <class T>
T abs_of(T x) {
  if constexpr (std::is_unsigned_v<T>)
    return x;
  else if constexpr (std::is_integral_v<T>)
    return x < 0 ? wrap_neg(x) : x;
  else
    return std::fabs(x);
}

// IsNaN / IsInf: float in, bool out.
template <class Pred>
void run_float_predicate(KernelContext& c, Pred pred) {
  const Tensor& x = c.in(0);
  const DType t = x.dtype();
  if (t == DType::Float16 || t == DType::BFloat16) {
    Tensor f = x.cast(DType::Float32);
    c.outputs[0] = map_unary<float, bool>(f, pred);
  } else if (t == DType::Float32) {
    c.outputs[0] = map_unary<float, bool>(x, pred);
  } else if (t == DType::Float64) {
    c.outputs[0] = map_unary<double, bool>(x, pred);
  } else {
    unsupported_dtype(c, t);
  }
}

void run_isnan(KernelContext& c) {
  run_float_predicate(c, [](auto v) { return std::isnan(v); });
}

void run_isinf(KernelContext& c) {
  const bool pos = c.node.attr_int("detect_positive", 1) != 0;
  const bool neg = c.node.attr_int("detect_negative", 1) != 0;
  run_float_predicate(c, [pos, neg](auto v) { return std::isinf(v) && (v > 0 ? pos : neg); });
}

void run_not(KernelContext& c) {
  const Tensor& x = c.in(0);
  if (x.dtype() != DType::Bool) fail(c.node.where() + ": input must be bool, got " + x.describe());
  c.outputs[0] = map_unary<bool, bool>(x, [](bool v) { return !v; });
}

}  // namespace

// One line per op: name, kernel family, cost function (nullptr: default), expression in x.
#define JOULE_UNARY(Name, kernel, cost, expr) \
  namespace {                                 \
  struct Fn##Name {                           \
    template <class T>                        \
    static T apply(T x) {                     \
      return expr;                            \
    }                                         \
  };                                          \
  }                                           \
  extern const OpDef kOp##Name;               \
  const OpDef kOp##Name{#Name, "", 1, 1, infer_same_type, kernel<Fn##Name>, cost};

JOULE_UNARY(Abs, run_numeric, nullptr, abs_of(x))
JOULE_UNARY(Neg, run_numeric, nullptr, wrap_neg(x))
JOULE_UNARY(Sign, run_numeric, nullptr, sign_of(x))
JOULE_UNARY(Reciprocal, run_float, nullptr, T(1) / x)
JOULE_UNARY(Sqrt, run_float, nullptr, std::sqrt(x))
JOULE_UNARY(Exp, run_float, transcendental_cost, std::exp(x))
JOULE_UNARY(Log, run_float, transcendental_cost, std::log(x))
JOULE_UNARY(Ceil, run_float, nullptr, std::ceil(x))
JOULE_UNARY(Floor, run_float, nullptr, std::floor(x))
// nearbyint in the default rounding mode rounds halves to even, as ONNX Round requires.
JOULE_UNARY(Round, run_float, nullptr, std::nearbyint(x))
JOULE_UNARY(Sin, run_float, transcendental_cost, std::sin(x))
JOULE_UNARY(Cos, run_float, transcendental_cost, std::cos(x))
JOULE_UNARY(Tan, run_float, transcendental_cost, std::tan(x))
JOULE_UNARY(Asin, run_float, transcendental_cost, std::asin(x))
JOULE_UNARY(Acos, run_float, transcendental_cost, std::acos(x))
JOULE_UNARY(Atan, run_float, transcendental_cost, std::atan(x))
JOULE_UNARY(Sinh, run_float, transcendental_cost, std::sinh(x))
JOULE_UNARY(Cosh, run_float, transcendental_cost, std::cosh(x))
JOULE_UNARY(Asinh, run_float, transcendental_cost, std::asinh(x))
JOULE_UNARY(Acosh, run_float, transcendental_cost, std::acosh(x))
JOULE_UNARY(Atanh, run_float, transcendental_cost, std::atanh(x))
JOULE_UNARY(Erf, run_float, transcendental_cost, std::erf(x))

#undef JOULE_UNARY

extern const OpDef kOpIsNaN;
const OpDef kOpIsNaN{"IsNaN", "", 1, 1, infer_bool, run_isnan};
extern const OpDef kOpIsInf;
const OpDef kOpIsInf{"IsInf", "", 1, 1, infer_bool, run_isinf};
extern const OpDef kOpNot;
const OpDef kOpNot{"Not", "", 1, 1, infer_same_type, run_not};

}  // namespace joule::ops
