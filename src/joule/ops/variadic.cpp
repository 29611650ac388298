// Variadic elementwise ops with numpy broadcasting of all inputs: Max, Min (NaN propagates),
// Sum, Mean. Every numeric dtype (halves through float32); integer Mean truncates.
#include "joule/ops/elementwise_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  if (c.num_inputs() == 0) fail(c.node.where() + ": needs at least one input");
  check_same_dtype(c, 0, c.num_inputs());
  infer_broadcast(c);
}

struct MaxFn {
  template <class T>
  T operator()(T a, T b) const {
    return (a > b || a != a) ? a : b;  // a != a: NaN wins
  }
};
struct MinFn {
  template <class T>
  T operator()(T a, T b) const {
    return (a < b || a != a) ? a : b;
  }
};
struct SumFn {
  template <class T>
  T operator()(T a, T b) const {
    return wrap_add(a, b);
  }
};

// Folds the inputs left to right with Fn; Mean divides the sum by the input count.
template <class Fn, bool kMean>
void run(KernelContext& c) {
  if (run_half_as_float(c, run<Fn, kMean>)) return;
  if (c.inputs.empty()) fail(c.node.where() + ": needs at least one input");
  check_same_dtype(c, 0, c.inputs.size());
  std::vector<Shape> shapes;
  for (size_t i = 0; i < c.inputs.size(); ++i) shapes.push_back(c.in(i).shape());
  const Shape out = broadcast_shapes(shapes, c.node);
  visit_numeric(c.in(0).dtype(), c.node.where().c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor acc = c.in(0);
    if (c.inputs.size() == 1 || acc.shape() != out) {
      // start from input 0 broadcast to the output shape (a fresh buffer, never the input's)
      Tensor zero(acc.dtype(), {});
      acc = broadcast_binary_rows<T, T, T>(acc, zero, out, [](T a, T) { return a; });
    }
    for (size_t i = 1; i < c.inputs.size(); ++i)
      acc = broadcast_binary_rows<T, T, T>(acc, c.in(i), out, Fn{});
    if constexpr (kMean) {
      const T n = static_cast<T>(c.inputs.size());
      acc = map_unary<T, T>(acc, [n](T v) { return static_cast<T>(v / n); });
    }
    c.outputs[0] = acc;
  });
}

}  // namespace

extern const OpDef kOpMax;
const OpDef kOpMax{"Max", "", 1, -1, infer, run<MaxFn, false>};
extern const OpDef kOpMin;
const OpDef kOpMin{"Min", "", 1, -1, infer, run<MinFn, false>};
extern const OpDef kOpSum;
const OpDef kOpSum{"Sum", "", 1, -1, infer, run<SumFn, false>};
extern const OpDef kOpMean;
const OpDef kOpMean{"Mean", "", 1, -1, infer, run<SumFn, true>};

}  // namespace joule::ops
