// TopK: the k largest (or smallest) elements along `axis` and their int64 indices. k is an
// attribute before opset 10, then input 1. Results are always sorted (also for sorted=0,
// which leaves the order unspecified); equal values keep the lower index first.
#include <algorithm>
#include <numeric>
#include <vector>

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

// k when known: the attribute (opset < 10) or the constant input; -1 otherwise.
int64_t known_k(const ir::Node& n, int64_t opset, const Tensor* kv) {
  if (opset < 10) return n.attr_int("k", -1);
  if (!kv) return -1;
  if (kv->numel() != 1) fail(n.where() + ": K must contain a single value, got " + kv->describe());
  return kv->value_as_int(0);
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  const int64_t k = known_k(
      c.node, c.opset, c.opset >= 10 && c.input_values.size() > 1 ? c.input_values[1] : nullptr);
  ir::TensorType v;
  v.dtype = x.dtype;
  if (x.has_shape) {
    const int64_t axis =
        normalize_axis(c.node.attr_int("axis", -1), static_cast<int64_t>(x.dims.size()), c.node);
    v.has_shape = true;
    v.dims = x.dims;
    const ir::Dim& d = x.dims[static_cast<size_t>(axis)];
    if (k >= 0 && d.is_static() && k > d.value)
      fail(c.node.where() + ": k=" + std::to_string(k) + " exceeds the axis size " +
           std::to_string(d.value));
    v.dims[static_cast<size_t>(axis)] = k >= 0 ? ir::Dim{k, ""} : ir::Dim{};
  }
  c.out(0) = v;
  if (c.output_types.size() > 1) {
    v.dtype = DType::Int64;
    c.out(1) = v;
  }
}

template <class T>
void topk(const T* x, T* vals, int64_t* idx, int64_t outer, int64_t n, int64_t inner, int64_t k,
          bool largest, ThreadPool* pool) {
  auto body = [&](int64_t begin, int64_t end) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t s = begin; s < end; ++s) {
      const int64_t o = s / inner, j = s % inner;
      const T* xp = x + o * n * inner + j;
      std::iota(order.begin(), order.end(), int64_t{0});
      auto before = [&](int64_t a, int64_t b) {
        const T va = xp[a * inner], vb = xp[b * inner];
        if (va != vb) return largest ? va > vb : va < vb;
        return a < b;
      };
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (int64_t t = 0; t < k; ++t) {
        const int64_t out = (o * k + t) * inner + j;
        vals[out] = xp[order[static_cast<size_t>(t)] * inner];
        idx[out] = order[static_cast<size_t>(t)];
      }
    }
  };
  parallel_or_serial(pool, outer * inner, body);
}

void run(KernelContext& c) {
  const Tensor& X0 = c.in(0);
  const Tensor X = is_half(X0.dtype()) ? X0.cast(DType::Float32) : X0;
  const int64_t k = known_k(c.node, c.opset, c.opset >= 10 ? &c.in(1) : nullptr);
  if (X.rank() == 0) fail(c.node.where() + ": input must have rank >= 1");
  const int64_t axis = normalize_axis(c.node.attr_int("axis", -1), X.rank(), c.node);
  const int64_t n = X.dim(static_cast<int>(axis));
  if (k < 0 || k > n)
    fail(c.node.where() + ": k=" + std::to_string(k) + " out of range for axis size " +
         std::to_string(n));
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < X.rank(); ++d) {
    if (d < axis) outer *= X.dim(d);
    if (d > axis) inner *= X.dim(d);
  }
  Shape ys = X.shape();
  ys[static_cast<size_t>(axis)] = k;
  Tensor V(X.dtype(), ys), I(DType::Int64, ys);
  const bool largest = c.node.attr_int("largest", 1) != 0;
  visit_numeric(X.dtype(), c.node.where().c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    topk<T>(X.data<T>(), V.data<T>(), I.data<int64_t>(), outer, n, inner, k, largest, c.pool);
  });
  c.outputs[0] = X0.dtype() == X.dtype() ? V : V.cast(X0.dtype());
  if (c.outputs.size() > 1) c.outputs[1] = I;
}

}  // namespace

extern const OpDef kOpTopK;
const OpDef kOpTopK{"TopK", "", 1, 2, infer, run};

}  // namespace joule::ops
