// ArgMax / ArgMin along one axis (keepdims, select_last_index); int64 output. Ties give the
// first index unless select_last_index=1.
#include <vector>

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  ir::TensorType& o = c.out(0);
  o = ir::TensorType{};
  o.dtype = DType::Int64;
  if (!x.has_shape) return;
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  const int64_t axis = normalize_axis(c.node.attr_int("axis", 0), rank, c.node);
  const bool keep = c.node.attr_int("keepdims", 1) != 0;
  o.has_shape = true;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis)
      o.dims.push_back(x.dims[static_cast<size_t>(d)]);
    else if (keep)
      o.dims.push_back(ir::Dim{1, ""});
  }
}

template <class T, bool Max>
void arg_kernel(const T* x, int64_t* y, int64_t outer, int64_t n, int64_t inner, bool last) {
  std::vector<T> best(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    const T* xp = x + o * n * inner;
    int64_t* yp = y + o * inner;
    for (int64_t j = 0; j < inner; ++j) {
      best[static_cast<size_t>(j)] = xp[j];
      yp[j] = 0;
    }
    for (int64_t k = 1; k < n; ++k)
      for (int64_t j = 0; j < inner; ++j) {
        const T v = xp[k * inner + j];
        T& b = best[static_cast<size_t>(j)];
        const bool better = Max ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
        if (better) {
          b = v;
          yp[j] = k;
        }
      }
  }
}

template <bool Max>
void run(KernelContext& c) {
  const Tensor& X0 = c.in(0);
  const Tensor X = is_half(X0.dtype()) ? X0.cast(DType::Float32) : X0;
  const int64_t rank = X.rank();
  const int64_t axis = normalize_axis(c.node.attr_int("axis", 0), rank, c.node);
  const bool keep = c.node.attr_int("keepdims", 1) != 0;
  const bool last = c.node.attr_int("select_last_index", 0) != 0;
  int64_t outer = 1, n = X.dim(static_cast<int>(axis)), inner = 1;
  Shape ys;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t s = X.dim(static_cast<int>(d));
    if (d < axis) outer *= s;
    if (d > axis) inner *= s;
    if (d != axis)
      ys.push_back(s);
    else if (keep)
      ys.push_back(1);
  }
  Tensor Y(DType::Int64, ys);
  if (n == 0 && Y.numel() > 0) fail(c.node.where() + ": cannot reduce over an empty axis");
  if (Y.numel() > 0) {
    visit_numeric(X.dtype(), c.node.where().c_str(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      arg_kernel<T, Max>(X.data<T>(), Y.data<int64_t>(), outer, n, inner, last);
    });
  }
  c.outputs[0] = Y;
}

}  // namespace

extern const OpDef kOpArgMax, kOpArgMin;
const OpDef kOpArgMax{"ArgMax", "", 1, 1, infer, run<true>};
const OpDef kOpArgMin{"ArgMin", "", 1, 1, infer, run<false>};

}  // namespace joule::ops
