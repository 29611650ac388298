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
    BroadcastLoop loop(out_shape, {cond.shape(), x.shape(), y.shape()});
    const int64_t sc = loop.inner_stride(0), sx = loop.inner_stride(1), sy = loop.inner_stride(2);
    loop.for_each_row([&](int64_t o, const int64_t* in, int64_t n) {
      const bool* rc = pc + in[0];
      const T* rx = px + in[1];
      const T* ry = py + in[2];
      T* ro = po + o;
      if (sc && sx && sy) {
        for (int64_t i = 0; i < n; ++i) ro[i] = rc[i] ? rx[i] : ry[i];
      } else {
        for (int64_t i = 0; i < n; ++i) ro[i] = rc[i * sc] ? rx[i * sx] : ry[i * sy];
      }
    });
    c.outputs[0] = out;
  });
}

}  // namespace

extern const OpDef kOpWhere;
const OpDef kOpWhere{"Where", "", 3, 3, infer, run};

}  // namespace joule::ops
