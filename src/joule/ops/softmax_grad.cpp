// The gradients of Softmax and LogSoftmax (joule domain), from the forward output Y:
//   joule.SoftmaxGrad(dY, Y)    -> dX = Y * (dY - sum_axis(dY * Y))
//   joule.LogSoftmaxGrad(dY, Y) -> dX = dY - exp(Y) * sum_axis(dY)
// along `axis`; with flatten=1 (the forward op below opset 13) over all dims from `axis` on.
#include <cmath>

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) { infer_same_as_input(c, 1); }

template <bool Log>
void run(KernelContext& c) {
  const Tensor& dY = c.in(0);
  const Tensor& Y = c.in(1);
  if (dY.shape() != Y.shape() || dY.dtype() != Y.dtype())
    fail(c.node.where() + ": dY " + dY.describe() + " and Y " + Y.describe() + " differ");
  const int64_t r = Y.rank();
  const int64_t axis = normalize_axis(c.node.attr_int("axis", -1), r, c.node);
  const bool flat = c.node.attr_int("flatten", 0) != 0;
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? outer : i == axis || flat ? n : inner) *= Y.dim(static_cast<int>(i));
  visit_floating(Y.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *dy = dY.data<T>(), *y = Y.data<T>();
    T* dx = c.output(0, Y.dtype(), Y.shape()).template data<T>();
    parallel_or_serial(c.pool, outer * inner, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t base = (t / inner) * n * inner + t % inner;
        double s = 0;
        for (int64_t k = 0; k < n; ++k) {
          const int64_t i = base + k * inner;
          s += Log ? static_cast<double>(dy[i]) : static_cast<double>(dy[i]) * static_cast<double>(y[i]);
        }
        for (int64_t k = 0; k < n; ++k) {
          const int64_t i = base + k * inner;
          const double yi = static_cast<double>(y[i]), gi = static_cast<double>(dy[i]);
          dx[i] = static_cast<T>(Log ? gi - std::exp(yi) * s : yi * (gi - s));
        }
      }
    });
  });
}

Cost cost(const CostContext& c) { return nn::per_element_cost(c, 4); }

}  // namespace

extern const OpDef kOpSoftmaxGrad, kOpLogSoftmaxGrad;
const OpDef kOpSoftmaxGrad{"SoftmaxGrad", "joule", 2, 2, infer, run<false>, cost};
const OpDef kOpLogSoftmaxGrad{"LogSoftmaxGrad", "joule", 2, 2, infer, run<true>, cost};

}  // namespace joule::ops
