// Where: out = cond ? x : y with numpy broadcasting of all three inputs; x and y of any one
// dtype, cond bool.
#include "joule/ops/elementwise_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  if (c.in(0).dtype != DType::Bool && c.in(0).dtype != DType::Undefined)
    fail(c.node.where() + ": condition must be bool, got " + c.in(0).str());
  check_same_dtype(c, 1, 3);
  c.out(0) = broadcast_types({&c.in(0), &c.in(1), &c.in(2)}, c.in(1).dtype, c.node);
}

void run(KernelContext& c) {
  const Tensor& cond = c.in(0);
  const Tensor& x = c.in(1);
  const Tensor& y = c.in(2);
  if (cond.dtype() != DType::Bool)
    fail(c.node.where() + ": condition must be bool, got " + cond.describe());
  check_same_dtype(c, 1, 3);
  const Shape out_shape = broadcast_shapes({cond.shape(), x.shape(), y.shape()}, c.node);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor out(x.dtype(), out_shape);
    const bool* pc = cond.data<bool>();
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* po = out.data<T>();
    const int64_t n = out.numel();
    BroadcastIndexer ic(out_shape, cond.shape()), ix(out_shape, x.shape()),
        iy(out_shape, y.shape());
    if (ic.identity() && ix.identity() && iy.identity()) {
      for (int64_t i = 0; i < n; ++i) po[i] = pc[i] ? px[i] : py[i];
    } else {
      auto at = [](const BroadcastIndexer& b, int64_t i) {
        return b.identity() ? i : (b.scalar() ? 0 : b.offset(i));
      };
      for (int64_t i = 0; i < n; ++i) po[i] = pc[at(ic, i)] ? px[at(ix, i)] : py[at(iy, i)];
    }
    c.outputs[0] = out;
  });
}

}  // namespace

extern const OpDef kOpWhere;
const OpDef kOpWhere{"Where", "", 3, 3, infer, run};

}  // namespace joule::ops
