#pragma once
// Shared by MaxPool, AveragePool and LpPool: geometry, inference and the window iteration.
// A window's cells outside the (unpadded) input are never visited; kernels that need the
// count of cells inside the padded input (count_include_pad) get it as `padded_count`.
#include <string>
#include <vector>

#include "joule/ops/conv_util.h"
#include "joule/ops/nn_util.h"

namespace joule::ops {

inline ConvGeometry read_pool_geometry(const ir::Node& n, int nsp, bool allow_dilations) {
  ConvGeometry g = read_conv_geometry(n, nsp, {});
  if (!allow_dilations && n.has_attr("dilations"))
    for (int64_t d : g.dilations)
      if (d != 1) fail_unsupported(n.where() + ": dilations are not supported by this op/opset");
  return g;
}

// Output 0: [N, C, pooled spatial...] with input 0's dtype; output 1 (when present): int64
// indices of the same shape.
inline void infer_pool(InferContext& c, bool allow_dilations) {
  const ir::TensorType& x = c.in(0);
  ir::TensorType o;
  o.dtype = x.dtype;
  if (x.has_shape) {
    if (x.dims.size() < 3) fail(c.node.where() + ": input rank must be >= 3, got " + x.str());
    const ConvGeometry g =
        read_pool_geometry(c.node, static_cast<int>(x.dims.size()) - 2, allow_dilations);
    o.has_shape = true;
    o.dims = {x.dims[0], x.dims[1]};
    for (const ir::Dim& d : conv_out_dims(g, c.node, x)) o.dims.push_back(d);
  }
  c.out(0) = o;
  if (c.output_types.size() > 1) {
    o.dtype = DType::Int64;
    c.out(1) = o;
  }
}

// Plans a pool over X (rank >= 3) and returns the output shape.
inline SpatialPlan plan_pool(const ir::Node& n, const Tensor& X, bool allow_dilations,
                             Shape* out_shape) {
  if (X.rank() < 3) fail(n.where() + ": input rank must be >= 3, got " + X.describe());
  const int nsp = X.rank() - 2;
  const ConvGeometry g = read_pool_geometry(n, nsp, allow_dilations);
  const SpatialPlan p = make_spatial_plan(g, n, Shape(X.shape().begin() + 2, X.shape().end()));
  *out_shape = {X.dim(0), X.dim(1)};
  for (int i = 0; i < nsp; ++i) out_shape->push_back(p.out[3 - nsp + i]);
  return p;
}

// One pooling window, normalised to 3-D: along dim j the visited input positions are
// first[j] + t * step[j] for t in [0, count[j]).
struct PoolWindow {
  int64_t first[3], step[3], count[3];
  int64_t padded_count;  // cells of the window inside the padded input
};

// Calls visit(plane, out_index_in_plane, window) for every output element of every (n, c)
// plane; planes are distributed over the pool.
template <class Visit>
void for_each_pool_window(const SpatialPlan& p, int64_t planes, ThreadPool* pool, Visit visit) {
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t o = 0;
      PoolWindow w;
      for (int64_t od = 0; od < p.out[0]; ++od)
        for (int64_t oh = 0; oh < p.out[1]; ++oh)
          for (int64_t ow = 0; ow < p.out[2]; ++ow, ++o) {
            const int64_t pos[3] = {od, oh, ow};
            w.padded_count = 1;
            for (int j = 0; j < 3; ++j) {
              const int64_t start = pos[j] * p.s[j] - p.pb[j];
              // valid taps: 0 <= start + k*d < in; padded taps: -pb <= start + k*d < in + pe
              const int64_t k0 = std::max<int64_t>(0, ceil_div(-start, p.d[j]));
              const int64_t k1 =
                  std::min<int64_t>(p.k[j], floor_div(p.in[j] - 1 - start, p.d[j]) + 1);
              const int64_t q1 =
                  std::min<int64_t>(p.k[j], floor_div(p.in[j] + p.pe[j] - 1 - start, p.d[j]) + 1);
              w.first[j] = start + k0 * p.d[j];
              w.step[j] = p.d[j];
              w.count[j] = std::max<int64_t>(0, k1 - k0);
              w.padded_count *= std::max<int64_t>(0, q1);
            }
            visit(t, o, w);
          }
    }
  };
  parallel_or_serial(pool, planes, body);
}

// A pool over at most 2 spatial dims (p.in[0] == 1 and p.k[0] == 1) with each output row's and
// column's window clipped to the input once, instead of per output: along each dim, output
// position o covers input positions first + t * step for t in [0, count), and `padded` of its
// taps lie inside the padded input (count_include_pad).
struct Pool2D {
  struct Range {
    int64_t first, count, padded;
  };
  std::vector<Range> rows, cols;
  int64_t step_h = 1, step_w = 1;
  static bool applies(const SpatialPlan& p) { return p.in[0] == 1 && p.k[0] == 1 && p.out[0] == 1; }
  explicit Pool2D(const SpatialPlan& p) : step_h(p.d[1]), step_w(p.d[2]) {
    for (int j = 1; j <= 2; ++j) {
      std::vector<Range>& v = j == 1 ? rows : cols;
      for (int64_t o = 0; o < p.out[j]; ++o) {
        const int64_t start = o * p.s[j] - p.pb[j];
        const int64_t k0 = std::max<int64_t>(0, ceil_div(-start, p.d[j]));
        const int64_t k1 = std::min<int64_t>(p.k[j], floor_div(p.in[j] - 1 - start, p.d[j]) + 1);
        const int64_t q1 = std::min<int64_t>(p.k[j], floor_div(p.in[j] + p.pe[j] - 1 - start, p.d[j]) + 1);
        v.push_back({start + k0 * p.d[j], std::max<int64_t>(0, k1 - k0), std::max<int64_t>(0, q1)});
      }
    }
  }
};

// Cost of a windowed pool: one flop per visited kernel cell.
inline Cost pool_cost(const CostContext& c) {
  Cost r;
  if (!c.out.empty()) {
    double kvol = 1;
    for (int64_t k : c.node.attr_ints("kernel_shape")) kvol *= static_cast<double>(k);
    r.flops = nn::numel_d(c.out[0]) * kvol;
  }
  r.bytes = io_bytes(c);
  return r;
}

}  // namespace joule::ops
