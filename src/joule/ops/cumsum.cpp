// CumSum along the axis given by input 1 (a scalar), with `exclusive` (the sum of the
// elements before, not including, each one) and `reverse` (accumulate from the end).
#include <vector>

#include "joule/ops/matmul_util.h"
#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  const ir::TensorType& a = c.in(1);
  if (a.has_shape &&
      !(a.dims.empty() || (a.dims.size() == 1 && a.dims[0].is_static() && a.dims[0].value == 1)))
    fail(c.node.where() + ": axis must be a scalar, got " + a.str());
  infer_same_as_input(c);
}

template <class T>
void cumsum(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool exclusive,
            bool reverse) {
  using U = nn::MacType<T>;  // integer sums wrap around
  std::vector<U> acc(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    std::fill(acc.begin(), acc.end(), U(0));
    for (int64_t s = 0; s < n; ++s) {
      const int64_t k = reverse ? n - 1 - s : s;
      const T* xp = x + (o * n + k) * inner;
      T* yp = y + (o * n + k) * inner;
      for (int64_t j = 0; j < inner; ++j) {
        U& a = acc[static_cast<size_t>(j)];
        if (exclusive) {
          yp[j] = static_cast<T>(a);
          a += static_cast<U>(xp[j]);
        } else {
          a += static_cast<U>(xp[j]);
          yp[j] = static_cast<T>(a);
        }
      }
    }
  }
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  const Tensor& X = c.in(0);
  const Tensor& A = c.in(1);
  if (A.numel() != 1 || A.rank() > 1)
    fail(c.node.where() + ": axis must be a scalar, got " + A.describe());
  if (A.dtype() != DType::Int32 && A.dtype() != DType::Int64)
    fail(c.node.where() + ": axis must be int32 or int64");
  const int64_t axis = normalize_axis(A.value_as_int(0), X.rank(), c.node);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < X.rank(); ++d) {
    if (d < axis) outer *= X.dim(d);
    if (d > axis) inner *= X.dim(d);
  }
  const bool exclusive = c.node.attr_int("exclusive", 0) != 0,
             reverse = c.node.attr_int("reverse", 0) != 0;
  Tensor Y(X.dtype(), X.shape());
  visit_numeric(X.dtype(), c.node.where().c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    cumsum<T>(X.data<T>(), Y.data<T>(), outer, X.dim(static_cast<int>(axis)), inner, exclusive,
              reverse);
  });
  c.outputs[0] = Y;
}

}  // namespace

extern const OpDef kOpCumSum;
const OpDef kOpCumSum{"CumSum", "", 2, 2, infer, run};

}  // namespace joule::ops
