// AveragePool: 1-D/2-D/3-D, strides, pads, auto_pad, ceil_mode, count_include_pad (and
// dilations, added at opset 19). Padded cells are excluded from the divisor unless
// count_include_pad=1; cells beyond the padded input (ceil_mode) are never counted.
#include "joule/ops/pool_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) { infer_pool(c, true); }

template <class T>
void avg_pool(const Tensor& X, Tensor& Y, const SpatialPlan& p, bool include_pad,
              ThreadPool* pool) {
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  const int64_t in_plane = p.in_size(), out_plane = p.out_size();
  if (Pool2D::applies(p)) {  // the same sums, the windows clipped once per row and column
    const Pool2D w(p);
    parallel_or_serial(pool, X.dim(0) * X.dim(1), [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const T* xp = x + t * in_plane;
        T* yp = y + t * out_plane;
        for (size_t i = 0; i < w.rows.size(); ++i)
          for (size_t j = 0; j < w.cols.size(); ++j) {
            const Pool2D::Range &r = w.rows[i], &c = w.cols[j];
            T sum = 0;
            for (int64_t a = 0; a < r.count; ++a) {
              const T* row = xp + (r.first + a * w.step_h) * p.in[2] + c.first;
              for (int64_t b = 0; b < c.count; ++b) sum += row[b * w.step_w];
            }
            const int64_t n = include_pad ? r.padded * c.padded : r.count * c.count;
            yp[i * w.cols.size() + j] = sum / static_cast<T>(n);
          }
      }
    });
    return;
  }
  for_each_pool_window(
      p, X.dim(0) * X.dim(1), pool, [&](int64_t t, int64_t o, const PoolWindow& w) {
        const T* xp = x + t * in_plane;
        T sum = 0;
        for (int64_t a = 0, id = w.first[0]; a < w.count[0]; ++a, id += w.step[0])
          for (int64_t b = 0, ih = w.first[1]; b < w.count[1]; ++b, ih += w.step[1]) {
            const T* row = xp + (id * p.in[1] + ih) * p.in[2];
            for (int64_t e = 0, iw = w.first[2]; e < w.count[2]; ++e, iw += w.step[2])
              sum += row[iw];
          }
        const int64_t n = include_pad ? w.padded_count : w.count[0] * w.count[1] * w.count[2];
        y[t * out_plane + o] = sum / static_cast<T>(n);
      });
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  const Tensor& X = c.in(0);
  Shape ys;
  const SpatialPlan p = plan_pool(c.node, X, true, &ys);
  const bool include_pad = c.node.attr_int("count_include_pad", 0) != 0;
  Tensor Y(X.dtype(), ys);
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    avg_pool<T>(X, Y, p, include_pad, c.pool);
  });
  c.outputs[0] = Y;
}

}  // namespace

extern const OpDef kOpAveragePool;
const OpDef kOpAveragePool{"AveragePool", "", 1, 1, infer, run, pool_cost};

}  // namespace joule::ops
