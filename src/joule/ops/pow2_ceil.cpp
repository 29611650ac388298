// joule.Pow2Ceil(X) -> Y = 2^ceil(X): the power-of-two scale of a trained log2 threshold (TQT,
// quantization-aware training). Its gradient (ActivationGrad kind Pow2Ceil) passes straight
// through the ceiling: dY * 2^ceil(x) * ln 2.
#include <cmath>

#include "joule/ops/util.h"

namespace joule::ops {
namespace {

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  visit_floating(x.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = x.data<T>();
    T* y = c.output(0, x.dtype(), x.shape()).template data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) y[i] = std::exp2(std::ceil(p[i]));
  });
}

}  // namespace

extern const OpDef kOpPow2Ceil;
const OpDef kOpPow2Ceil{"Pow2Ceil", "joule", 1, 1, [](InferContext& c) { infer_same_as_input(c); }, run};

}  // namespace joule::ops
