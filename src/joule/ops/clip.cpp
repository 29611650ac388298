// Clip: y = min(max(x, min), max). Before opset 11 the bounds are float attributes `min`/`max`;
// from opset 11 they are optional scalar inputs 1 and 2 (same dtype as x). Every numeric dtype
// (halves through float32). When min > max every element becomes max (as numpy.clip); NaN stays.
#include <limits>

#include "joule/ops/elementwise_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  check_same_dtype(c, 0, c.num_inputs());
  for (size_t i = 1; i < c.num_inputs(); ++i) {
    if (!c.has(i)) continue;
    const ir::TensorType& t = c.in(i);
    if (t.is_static() && shape_numel(t.static_shape()) != 1)
      fail(c.node.where() + ": bound input " + std::to_string(i) + " must be a scalar, got " +
           t.str());
  }
  infer_same_as_input(c);
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  check_same_dtype(c, 0, c.inputs.size());
  const Tensor& x = c.in(0);
  visit_numeric(x.dtype(), c.node.where().c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
    if (c.opset < 11) {
      if (c.node.has_attr("min")) lo = static_cast<T>(c.node.attr_float("min", 0.f));
      if (c.node.has_attr("max")) hi = static_cast<T>(c.node.attr_float("max", 0.f));
    } else {
      for (size_t i = 1; i <= 2; ++i) {
        if (!c.has(i)) continue;
        const Tensor& b = *c.inputs[i];
        if (b.numel() != 1)
          fail(c.node.where() + ": bound input " + std::to_string(i) + " must be a scalar, got " +
               b.describe());
        (i == 1 ? lo : hi) = b.data<T>()[0];
      }
    }
    c.outputs[0] = map_unary<T, T>(x, [lo, hi](T v) {
      T r = v < lo ? lo : v;
      return r > hi ? hi : r;
    });
  });
}

}  // namespace

extern const OpDef kOpClip;
const OpDef kOpClip{"Clip", "", 1, 3, infer, run};

}  // namespace joule::ops
