// LpPool: y = (sum over the window of |x|^p)^(1/p); padded cells contribute 0.
// 1-D/2-D/3-D, strides, pads, auto_pad; ceil_mode and dilations (opset 18).
#include <cmath>

#include "joule/ops/pool_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) { infer_pool(c, true); }

template <class T>
void lp_pool(const Tensor& X, Tensor& Y, const SpatialPlan& p, double pw, ThreadPool* pool) {
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  const int64_t in_plane = p.in_size(), out_plane = p.out_size();
  for_each_pool_window(
      p, X.dim(0) * X.dim(1), pool, [&](int64_t t, int64_t o, const PoolWindow& w) {
        const T* xp = x + t * in_plane;
        double sum = 0;
        for (int64_t a = 0, id = w.first[0]; a < w.count[0]; ++a, id += w.step[0])
          for (int64_t b = 0, ih = w.first[1]; b < w.count[1]; ++b, ih += w.step[1]) {
            const T* row = xp + (id * p.in[1] + ih) * p.in[2];
            for (int64_t e = 0, iw = w.first[2]; e < w.count[2]; ++e, iw += w.step[2])
              sum += std::pow(std::abs(static_cast<double>(row[iw])), pw);
          }
        y[t * out_plane + o] = static_cast<T>(std::pow(sum, 1.0 / pw));
      });
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  const Tensor& X = c.in(0);
  Shape ys;
  const SpatialPlan p = plan_pool(c.node, X, true, &ys);
  const double pw = static_cast<double>(c.node.attr_float("p", 2.f));
  if (!(pw > 0)) fail(c.node.where() + ": p must be positive");
  Tensor Y(X.dtype(), ys);
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    lp_pool<T>(X, Y, p, pw, c.pool);
  });
  c.outputs[0] = Y;
}

}  // namespace

extern const OpDef kOpLpPool;
const OpDef kOpLpPool{"LpPool", "", 1, 1, infer, run, pool_cost};

}  // namespace joule::ops
