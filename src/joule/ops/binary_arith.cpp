// Binary arithmetic with numpy broadcasting: Add, Sub, Mul, Div, Mod, BitShift (same dtype for
// both inputs) and Pow (exponent dtype may differ). Every numeric dtype (halves through
// float32); integers wrap around on overflow. Before opset 7 the legacy `broadcast`/`axis`
// attributes are honoured.
#include <cmath>
#include <limits>
#include <type_traits>

#include "joule/ops/elementwise_util.h"

namespace joule::ops {
namespace {

void infer_same_dtype(InferContext& c) {
  check_same_dtype(c, 0, 2);
  const ir::TensorType b = legacy_broadcast_type(c.node, c.opset, c.in(0), c.in(1));
  c.out(0) = broadcast_types({&c.in(0), &b}, c.in(0).dtype, c.node);
}

// Input 1 reshaped for legacy (opset < 7) broadcasting.
Tensor second_input(const KernelContext& c) {
  const Tensor& b = c.in(1);
  return b.reshaped(
      legacy_broadcast_shape(c.node, c.opset, static_cast<size_t>(c.in(0).rank()), b.shape()));
}

// Op: constructed from the node; `T operator()(T, T) const`; `static bool accepts(DType)`.
template <class Op>
void run_same_dtype(KernelContext& c) {
  if (run_half_as_float(c, run_same_dtype<Op>)) return;
  check_same_dtype(c, 0, 2);
  const Tensor& a = c.in(0);
  const Tensor b = second_input(c);
  if (!Op::accepts(a.dtype()))
    fail_unsupported(c.node.where() + ": dtype " + dtype_name(a.dtype()) + " is not supported");
  const Shape out = broadcast_shapes({a.shape(), b.shape()}, c.node);
  const Op op(c.node);
  visit_numeric(a.dtype(), c.node.where().c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    c.outputs[0] = broadcast_binary_rows<T, T, T>(a, b, out, [&op](T x, T y) { return op(x, y); });
  });
}

bool any_numeric(DType) { return true; }

struct Add {
  explicit Add(const ir::Node&) {}
  static bool accepts(DType t) { return any_numeric(t); }
  template <class T>
  T operator()(T x, T y) const {
    return wrap_add(x, y);
  }
};

struct Sub {
  explicit Sub(const ir::Node&) {}
  static bool accepts(DType t) { return any_numeric(t); }
  template <class T>
  T operator()(T x, T y) const {
    return wrap_sub(x, y);
  }
};

struct Mul {
  explicit Mul(const ir::Node&) {}
  static bool accepts(DType t) { return any_numeric(t); }
  template <class T>
  T operator()(T x, T y) const {
    return wrap_mul(x, y);
  }
};

// Integer division truncates toward zero; division by zero is an error for integers.
struct Div {
  const ir::Node& node;
  explicit Div(const ir::Node& n) : node(n) {}
  static bool accepts(DType t) { return any_numeric(t); }
  template <class T>
  T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>) {
      if (y == T(0)) fail(node.where() + ": integer division by zero");
      if constexpr (std::is_signed_v<T>)
        if (y == T(-1)) return wrap_neg(x);  // lowest / -1 overflows
    }
    return static_cast<T>(x / y);
  }
};

// fmod = 0: the result takes the sign of the divisor (Python %); fmod = 1: the sign of the
// dividend (C fmod). Floats with fmod = 0 (which ONNX disallows) get numpy.mod semantics.
struct Mod {
  const ir::Node& node;
  bool fmod;
  explicit Mod(const ir::Node& n) : node(n), fmod(n.attr_int("fmod", 0) != 0) {
    const int64_t f = n.attr_int("fmod", 0);
    if (f != 0 && f != 1) fail(n.where() + ": fmod must be 0 or 1, got " + std::to_string(f));
  }
  static bool accepts(DType t) { return any_numeric(t); }
  template <class T>
  T operator()(T x, T y) const {
    T r;
    if constexpr (std::is_integral_v<T>) {
      if (y == T(0)) fail(node.where() + ": integer modulo by zero");
      if constexpr (std::is_signed_v<T>)
        if (y == T(-1)) return T(0);  // lowest % -1 overflows
      r = static_cast<T>(x % y);
    } else {
      r = std::fmod(x, y);
    }
    if constexpr (std::is_signed_v<T> || std::is_floating_point_v<T>)
      if (!fmod && r != T(0) && ((r < T(0)) != (y < T(0)))) r = static_cast<T>(r + y);
    return r;
  }
};

// Shifts of at least the bit width give 0.
struct BitShift {
  bool left;
  explicit BitShift(const ir::Node& n) {
    const std::string d = n.attr_string("direction", "");
    if (d != "LEFT" && d != "RIGHT")
      fail(n.where() + ": direction must be \"LEFT\" or \"RIGHT\", got \"" + d + "\"");
    left = d == "LEFT";
  }
  static bool accepts(DType t) {
    return t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64;
  }
  template <class T>
  T operator()(T x, T y) const {
    if constexpr (std::is_unsigned_v<T>) {
      if (y >= T(sizeof(T) * 8)) return T(0);
      using W = WrapType<T>;
      return static_cast<T>(left ? static_cast<W>(x) << y : static_cast<W>(x) >> y);
    } else {
      return T(0);  // not reached: accepts() admits unsigned types only
    }
  }
};

// ---- Pow: output dtype = base dtype; the exponent may have any numeric dtype.

// Integer power by squaring (wrapping on overflow). Negative exponents give the truncated
// value of 1/x^-e: 1 for x = 1, +-1 for x = -1, otherwise 0.
template <class T>
T int_pow(T x, int64_t e) {
  if (e < 0) {
    if (x == T(1)) return T(1);
    if constexpr (std::is_signed_v<T>)
      if (x == T(-1)) return (e % 2) ? T(-1) : T(1);
    return T(0);
  }
  T r = T(1);
  while (e > 0) {
    if (e & 1) r = wrap_mul(r, x);
    x = wrap_mul(x, x);
    e >>= 1;
  }
  return r;
}

void infer_pow(InferContext& c) {
  const ir::TensorType b = legacy_broadcast_type(c.node, c.opset, c.in(0), c.in(1));
  c.out(0) = broadcast_types({&c.in(0), &b}, c.in(0).dtype, c.node);
}

void run_pow(KernelContext& c) {
  if (run_half_as_float(c, run_pow)) return;
  const Tensor& a = c.in(0);
  const Tensor& e_in = c.in(1);
  const Shape out = broadcast_shapes(
      {a.shape(),
       legacy_broadcast_shape(c.node, c.opset, static_cast<size_t>(a.rank()), e_in.shape())},
      c.node);
  if (e_in.dtype() == DType::Bool)
    fail_unsupported(c.node.where() + ": bool exponent is not supported");
  visit_numeric(a.dtype(), c.node.where().c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Tensor e = e_in.dtype() == a.dtype() ? second_input(c)
                     : (is_integer(a.dtype()) && is_integer(e_in.dtype()))
                         ? second_input(c).cast(DType::Int64)
                         : second_input(c).cast(DType::Float64);
    if (e.dtype() == a.dtype()) {
      c.outputs[0] = broadcast_binary_rows<T, T, T>(a, e, out, [](T x, T y) -> T {
        if constexpr (std::is_integral_v<T>)
          return int_pow(x, static_cast<int64_t>(y));
        else
          return std::pow(x, y);
      });
    } else if (e.dtype() == DType::Int64) {
      c.outputs[0] = broadcast_binary_rows<T, int64_t, T>(a, e, out, [](T x, int64_t y) -> T {
        if constexpr (std::is_integral_v<T>)
          return int_pow(x, y);
        else
          return static_cast<T>(std::pow(static_cast<double>(x), static_cast<double>(y)));
      });
    } else {
      c.outputs[0] = broadcast_binary_rows<T, double, T>(a, e, out, [](T x, double y) -> T {
        return saturate_cast<T>(std::pow(static_cast<double>(x), y));
      });
    }
  });
}

}  // namespace

#define JOULE_BINARY(Name)      \
  extern const OpDef kOp##Name; \
  const OpDef kOp##Name{#Name, "", 2, 2, infer_same_dtype, run_same_dtype<Name>};

JOULE_BINARY(Add)
JOULE_BINARY(Sub)
JOULE_BINARY(Mul)
JOULE_BINARY(Div)
JOULE_BINARY(Mod)
JOULE_BINARY(BitShift)

#undef JOULE_BINARY

extern const OpDef kOpPow;
const OpDef kOpPow{"Pow", "", 2, 2, infer_pow, run_pow, transcendental_cost};

}  // namespace joule::ops
