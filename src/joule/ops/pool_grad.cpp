// The gradients of the pools (joule domain), with the forward node's attributes:
//   joule.MaxPoolGrad(dY, X) -> dX: each output's gradient goes to the first maximum of its
//     window (MaxPool's choice); overlapping windows add up.
//   joule.AveragePoolGrad(dY; input_shape) -> dX: each output's gradient spread evenly over
//     the cells its average divided by (count_include_pad as the forward op); with global=1
//     (GlobalAveragePool) over the whole plane.
#include "joule/ops/pool_util.h"

namespace joule::ops {
namespace {

// The input offset of cell (a, b, c) of window `w` in a plane of `p`.
inline int64_t cell(const SpatialPlan& p, const PoolWindow& w, int64_t a, int64_t b, int64_t c) {
  return ((w.first[0] + a * w.step[0]) * p.in[1] + (w.first[1] + b * w.step[1])) * p.in[2] + w.first[2] + c * w.step[2];
}

void check_dy(const ir::Node& n, const Tensor& dy, const Shape& want) {
  if (dy.shape() != want) fail(n.where() + ": dY " + dy.describe() + " does not match the pooled shape " + shape_str(want));
}

void infer_max(InferContext& c) { c.out(0) = c.in(1); }

void run_max(KernelContext& c) {
  const Tensor& dY = c.in(0);
  const Tensor& X = c.in(1);
  Shape ys;
  const SpatialPlan p = plan_pool(c.node, X, true, &ys);
  check_dy(c.node, dY, ys);
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *dy = dY.data<T>(), *x = X.data<T>();
    Tensor& out = c.output(0, X.dtype(), X.shape());
    T* dx = out.template data<T>();
    const int64_t in_plane = p.in_size(), out_plane = p.out_size();
    if (Pool2D::applies(p)) {  // the windows clipped once per row and column
      const Pool2D w(p);
      parallel_or_serial(c.pool, X.dim(0) * X.dim(1), [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const T *xp = x + t * in_plane, *g = dy + t * out_plane;
          T* dxp = dx + t * in_plane;
          std::fill(dxp, dxp + in_plane, T(0));
          for (size_t i = 0; i < w.rows.size(); ++i)
            for (size_t j = 0; j < w.cols.size(); ++j) {
              const Pool2D::Range &r = w.rows[i], &cl = w.cols[j];
              int64_t best = -1;
              for (int64_t a = 0; a < r.count; ++a) {
                const int64_t row = (r.first + a * w.step_h) * p.in[2] + cl.first;
                for (int64_t b = 0; b < cl.count; ++b) {
                  const int64_t k = row + b * w.step_w;
                  if (best < 0 || xp[k] > xp[best]) best = k;
                }
              }
              if (best >= 0) dxp[best] += g[i * w.cols.size() + j];
            }
        }
      });
      return;
    }
    for_each_pool_window(p, X.dim(0) * X.dim(1), c.pool, [&](int64_t t, int64_t o, const PoolWindow& w) {
      const T* xp = x + t * in_plane;
      T* dxp = dx + t * in_plane;
      if (o == 0) std::fill(dxp, dxp + in_plane, T(0));
      int64_t best = -1;
      for (int64_t a = 0; a < w.count[0]; ++a)
        for (int64_t b = 0; b < w.count[1]; ++b)
          for (int64_t k = 0; k < w.count[2]; ++k) {
            const int64_t i = cell(p, w, a, b, k);
            if (best < 0 || xp[i] > xp[best]) best = i;
          }
      if (best >= 0) dxp[best] += dy[t * out_plane + o];
    });
  });
}

Shape input_shape(const ir::Node& n) {
  if (!n.has_attr("input_shape")) fail(n.where() + ": attribute input_shape is required");
  return n.attr_ints("input_shape");
}

void infer_avg(InferContext& c) {
  ir::TensorType& o = c.out(0);
  o.dtype = c.in(0).dtype;
  o.has_shape = true;
  o.dims.clear();
  for (int64_t v : input_shape(c.node)) o.dims.push_back(ir::Dim{v, ""});
}

void run_avg(KernelContext& c) {
  const Tensor& dY = c.in(0);
  const Shape xs = input_shape(c.node);
  if (xs.size() < 3) fail(c.node.where() + ": input_shape " + shape_str(xs) + " has no spatial dims");
  const int64_t planes = xs[0] * xs[1], in_plane = planes == 0 ? 0 : shape_numel(xs) / planes;
  visit_floating(dY.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* dy = dY.data<T>();
    T* dx = c.output(0, dY.dtype(), xs).template data<T>();
    if (c.node.attr_int("global", 0) != 0) {
      Shape want = {xs[0], xs[1]};
      want.resize(xs.size(), 1);
      check_dy(c.node, dY, want);
      parallel_or_serial(c.pool, planes, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) std::fill(dx + t * in_plane, dx + (t + 1) * in_plane, dy[t] / static_cast<T>(in_plane));
      });
      return;
    }
    const int nsp = static_cast<int>(xs.size()) - 2;
    const SpatialPlan p = make_spatial_plan(read_pool_geometry(c.node, nsp, true), c.node, Shape(xs.begin() + 2, xs.end()));
    Shape ys = {xs[0], xs[1]};
    for (int i = 0; i < nsp; ++i) ys.push_back(p.out[3 - nsp + i]);
    check_dy(c.node, dY, ys);
    const bool include_pad = c.node.attr_int("count_include_pad", 0) != 0;
    const int64_t out_plane = p.out_size();
    if (Pool2D::applies(p)) {
      const Pool2D w(p);
      parallel_or_serial(c.pool, planes, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const T* g = dy + t * out_plane;
          T* dxp = dx + t * in_plane;
          std::fill(dxp, dxp + in_plane, T(0));
          for (size_t i = 0; i < w.rows.size(); ++i)
            for (size_t j = 0; j < w.cols.size(); ++j) {
              const Pool2D::Range &r = w.rows[i], &cl = w.cols[j];
              const int64_t n = include_pad ? r.padded * cl.padded : r.count * cl.count;
              if (n == 0) continue;
              const T v = g[i * w.cols.size() + j] / static_cast<T>(n);
              for (int64_t a = 0; a < r.count; ++a) {
                T* row = dxp + (r.first + a * w.step_h) * p.in[2] + cl.first;
                for (int64_t b = 0; b < cl.count; ++b) row[b * w.step_w] += v;
              }
            }
        }
      });
      return;
    }
    for_each_pool_window(p, planes, c.pool, [&](int64_t t, int64_t o, const PoolWindow& w) {
      T* dxp = dx + t * in_plane;
      if (o == 0) std::fill(dxp, dxp + in_plane, T(0));
      const int64_t n = include_pad ? w.padded_count : w.count[0] * w.count[1] * w.count[2];
      if (n == 0) return;
      const T g = dy[t * out_plane + o] / static_cast<T>(n);
      for (int64_t a = 0; a < w.count[0]; ++a)
        for (int64_t b = 0; b < w.count[1]; ++b)
          for (int64_t k = 0; k < w.count[2]; ++k) dxp[cell(p, w, a, b, k)] += g;
    });
  });
}

}  // namespace

extern const OpDef kOpMaxPoolGrad, kOpAveragePoolGrad;
const OpDef kOpMaxPoolGrad{"MaxPoolGrad", "joule", 2, 2, infer_max, run_max, pool_cost};
const OpDef kOpAveragePoolGrad{"AveragePoolGrad", "joule", 1, 1, infer_avg, run_avg, data_movement_cost};

}  // namespace joule::ops
