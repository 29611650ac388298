// Range: start + i*delta for i < max(ceil((limit-start)/delta), 0); scalar inputs, any numeric dtype.
#include <cmath>
#include <type_traits>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

int64_t range_count(const Tensor& start, const Tensor& limit, const Tensor& delta,
                    const ir::Node& node) {
  for (const Tensor* t : {&start, &limit, &delta})
    if (t->numel() != 1) fail(node.where() + ": start, limit and delta must be scalars");
  return visit_numeric(start.dtype(), "Range", [&](auto tag) -> int64_t {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const double s = start.value_as_double(0), l = limit.value_as_double(0),
                   d = delta.value_as_double(0);
      if (d == 0) fail(node.where() + ": delta must not be 0");
      const double n = std::ceil((l - s) / d);
      if (!(n > 0)) return 0;
      if (n > 1e12) fail(node.where() + ": range too long");
      return static_cast<int64_t>(n);
    } else {
      const int64_t s = start.value_as_int(0), l = limit.value_as_int(0), d = delta.value_as_int(0);
      if (d == 0) fail(node.where() + ": delta must not be 0");
      if (d > 0) return l > s ? (l - s - 1) / d + 1 : 0;
      return s > l ? (s - l - 1) / (-d) + 1 : 0;
    }
  });
}

void infer(InferContext& c) {
  const DType dt = c.in(0).dtype;
  const Tensor *s = c.input_values.size() > 2 ? c.input_values[0] : nullptr;
  if (s && c.input_values[1] && c.input_values[2]) {
    c.out(0) = make_type(dt, {ir::Dim{range_count(*s, *c.input_values[1], *c.input_values[2], c.node), ""}});
    return;
  }
  c.out(0) = make_type(dt, unknown_dims(1));
}

void run(KernelContext& c) {
  const Tensor &start = c.in(0), &limit = c.in(1), &delta = c.in(2);
  if (limit.dtype() != start.dtype() || delta.dtype() != start.dtype())
    fail(c.node.where() + ": start, limit and delta must have the same dtype");
  const int64_t n = range_count(start, limit, delta, c.node);
  Tensor out(start.dtype(), {n});
  visit_numeric(start.dtype(), "Range", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.data<T>();
    const T s = *start.data<T>(), d = *delta.data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(s + static_cast<T>(i) * d);
  });
  c.outputs[0] = out;
}

}  // namespace

extern const OpDef kOpRange;
const OpDef kOpRange{"Range", "", 3, 3, infer, run, data_movement_cost};

}  // namespace joule::ops
