// Comparisons (Equal, Less, LessOrEqual, Greater, GreaterOrEqual: numeric inputs of one dtype,
// bool output; Equal also on bool) and logical ops (And, Or, Xor: bool inputs), with numpy
// broadcasting (legacy `broadcast`/`axis` attributes before opset 7).
#include "joule/ops/elementwise_util.h"

namespace joule::ops {
namespace {

void infer_bool(InferContext& c) {
  check_same_dtype(c, 0, 2);
  const ir::TensorType b = legacy_broadcast_type(c.node, c.opset, c.in(0), c.in(1));
  c.out(0) = broadcast_types({&c.in(0), &b}, DType::Bool, c.node);
}

// Pred: `bool operator()(T, T) const` for any T; kBool: whether bool inputs are accepted.
template <class Pred, bool kBool>
void run_compare(KernelContext& c) {
  if (run_half_as_float(c, run_compare<Pred, kBool>)) return;
  check_same_dtype(c, 0, 2);
  const Tensor& a = c.in(0);
  const Tensor& b_in = c.in(1);
  const Tensor b = b_in.reshaped(
      legacy_broadcast_shape(c.node, c.opset, static_cast<size_t>(a.rank()), b_in.shape()));
  const Shape out = broadcast_shapes({a.shape(), b.shape()}, c.node);
  if (a.dtype() == DType::Bool) {
    if (!kBool) fail(c.node.where() + ": bool inputs are not allowed");
    c.outputs[0] = broadcast_binary_rows<bool, bool, bool>(a, b, out, Pred{});
    return;
  }
  visit_numeric(a.dtype(), c.node.where().c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    c.outputs[0] = broadcast_binary_rows<T, T, bool>(a, b, out, Pred{});
  });
}

template <class Pred>
void run_logic(KernelContext& c) {
  const Tensor& a = c.in(0);
  const Tensor& b_in = c.in(1);
  if (a.dtype() != DType::Bool || b_in.dtype() != DType::Bool)
    fail(c.node.where() + ": inputs must be bool, got " + a.describe() + " and " + b_in.describe());
  const Tensor b = b_in.reshaped(
      legacy_broadcast_shape(c.node, c.opset, static_cast<size_t>(a.rank()), b_in.shape()));
  const Shape out = broadcast_shapes({a.shape(), b.shape()}, c.node);
  c.outputs[0] = broadcast_binary_rows<bool, bool, bool>(a, b, out, Pred{});
}

struct EqualFn {
  template <class T>
  bool operator()(T x, T y) const {
    return x == y;
  }
};
struct LessFn {
  template <class T>
  bool operator()(T x, T y) const {
    return x < y;
  }
};
struct LessOrEqualFn {
  template <class T>
  bool operator()(T x, T y) const {
    return x <= y;
  }
};
struct GreaterFn {
  template <class T>
  bool operator()(T x, T y) const {
    return x > y;
  }
};
struct GreaterOrEqualFn {
  template <class T>
  bool operator()(T x, T y) const {
    return x >= y;
  }
};
struct AndFn {
  bool operator()(bool x, bool y) const { return x && y; }
};
struct OrFn {
  bool operator()(bool x, bool y) const { return x || y; }
};
struct XorFn {
  bool operator()(bool x, bool y) const { return x != y; }
};

}  // namespace

#define JOULE_COMPARE(Name, kBool) \
  extern const OpDef kOp##Name;    \
  const OpDef kOp##Name{#Name, "", 2, 2, infer_bool, run_compare<Name##Fn, kBool>};
#define JOULE_LOGIC(Name)       \
  extern const OpDef kOp##Name; \
  const OpDef kOp##Name{#Name, "", 2, 2, infer_bool, run_logic<Name##Fn>};

JOULE_COMPARE(Equal, true)
JOULE_COMPARE(Less, false)
JOULE_COMPARE(LessOrEqual, false)
JOULE_COMPARE(Greater, false)
JOULE_COMPARE(GreaterOrEqual, false)
JOULE_LOGIC(And)
JOULE_LOGIC(Or)
JOULE_LOGIC(Xor)

#undef JOULE_COMPARE
#undef JOULE_LOGIC

}  // namespace joule::ops
