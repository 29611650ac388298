// The gradients of the indexing ops (joule domain), into zeros of the forward input's shape:
//   joule.SliceGrad(dY; input_shape, starts, ends, axes, steps) -> dX: dY written back where
//     Slice took it (Slice's own parameters, resolved as it resolves them)
//   joule.GatherGrad(dY, indices; input_shape, axis) -> dX: dY added at the gathered rows
//     (repeated indices accumulate; negative indices count from the end)
#include <cstring>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

Shape input_shape(const ir::Node& n) {
  if (!n.has_attr("input_shape")) fail(n.where() + ": attribute input_shape is required");
  return n.attr_ints("input_shape");
}

void infer(InferContext& c) {
  c.out(0) = make_type(c.in(0).dtype, dims_of(input_shape(c.node)));
}

void run_slice(KernelContext& c) {
  const Tensor& dY = c.in(0);
  const Shape xs = input_shape(c.node);
  const int64_t r = static_cast<int64_t>(xs.size());
  SliceParams p{c.node.attr_ints("starts"), c.node.attr_ints("ends"), c.node.attr_ints("axes"), c.node.attr_ints("steps")};
  normalize_slice_params(p, r, c.node);
  // Where element j of dY lies in dX: offset + sum_d j_d * stride_d.
  const SliceView v = slice_view(xs, p);
  const Shape& ys = v.shape;
  const std::vector<int64_t>& stride = v.strides;
  const int64_t offset = v.offset;
  if (dY.shape() != ys) fail(c.node.where() + ": dY " + dY.describe() + " is not the slice's shape " + shape_str(ys));
  Tensor& dX = c.output(0, dY.dtype(), xs);
  std::memset(dX.raw(), 0, dX.nbytes());
  visit_elem_bytes(dY.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = static_cast<const U*>(dY.raw());
    U* dst = static_cast<U*>(dX.raw());
    std::vector<int64_t> idx(static_cast<size_t>(r), 0);
    int64_t at = offset;
    for (int64_t j = 0; j < dY.numel(); ++j) {
      dst[at] = src[j];
      for (int64_t d = r - 1; d >= 0; --d) {  // next multi-index of dY, and where it lands
        const size_t u = static_cast<size_t>(d);
        at += stride[u];
        if (++idx[u] < ys[u]) break;
        at -= stride[u] * ys[u];
        idx[u] = 0;
      }
    }
  });
}

void run_gather(KernelContext& c) {
  const Tensor& dY = c.in(0);
  const Shape xs = input_shape(c.node);
  const int64_t r = static_cast<int64_t>(xs.size());
  const int64_t axis = normalize_axis(c.node.attr_int("axis", 0), r, c.node);
  const std::vector<int64_t> idx = index_values(c.in(1), c.node, "indices");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= xs[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < r; ++d) inner *= xs[static_cast<size_t>(d)];
  const int64_t dim = xs[static_cast<size_t>(axis)], k = static_cast<int64_t>(idx.size());
  Shape ys(xs.begin(), xs.begin() + axis);
  ys.insert(ys.end(), c.in(1).shape().begin(), c.in(1).shape().end());
  ys.insert(ys.end(), xs.begin() + axis + 1, xs.end());
  if (dY.shape() != ys) fail(c.node.where() + ": dY " + dY.describe() + " is not the gather's shape " + shape_str(ys));
  visit_floating(dY.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* g = dY.data<T>();
    Tensor& dX = c.output(0, dY.dtype(), xs);
    T* dx = dX.template data<T>();
    std::fill(dx, dx + dX.numel(), T(0));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < k; ++j) {
        const int64_t row = normalize_index(idx[static_cast<size_t>(j)], dim, c.node);
        T* dst = dx + (o * dim + row) * inner;
        const T* src = g + (o * k + j) * inner;
        for (int64_t i = 0; i < inner; ++i) dst[i] += src[i];
      }
  });
}

}  // namespace

extern const OpDef kOpSliceGrad, kOpGatherGrad;
const OpDef kOpSliceGrad{"SliceGrad", "joule", 1, 1, infer, run_slice, data_movement_cost};
const OpDef kOpGatherGrad{"GatherGrad", "joule", 2, 2, infer, run_gather, data_movement_cost};

}  // namespace joule::ops
