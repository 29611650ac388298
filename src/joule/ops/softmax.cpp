// Softmax, LogSoftmax, Hardmax. Before opset 13 the input is coerced to 2-D at `axis`
// (default 1) and the op runs over the flattened trailing part; from opset 13 it runs along
// the single dim `axis` (default -1). Softmax subtracts the max for numerical stability.
#include <cmath>
#include <limits>
#include <vector>

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

enum class Kind { Softmax, LogSoftmax, Hardmax };

int64_t default_axis(int64_t opset) { return opset < 13 ? 1 : -1; }

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (x.has_shape) {
    const int64_t r = static_cast<int64_t>(x.dims.size());
    const int64_t axis = c.node.attr_int("axis", default_axis(c.opset));
    // Before opset 13 axis may equal rank (empty trailing part) -- as in the coerce-to-2-D rule.
    if (!(c.opset < 13 && axis == r)) normalize_axis(axis, r, c.node);
  }
  infer_same_as_input(c);
}

// Softmax along contiguous rows (inner == 1, the usual last-axis case): the same arithmetic
// in the same order as the general loop below, without its per-row index vectors. The fast
// float32 kernel is the softmax class's simd algorithm (kernels/eltwise/norm.cpp).
template <class T>
void softmax_rows(const T* x, T* y, int64_t outer, int64_t n, ThreadPool* pool) {
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const T* xp = x + o * n;
      T* yp = y + o * n;
      T m = -std::numeric_limits<T>::infinity();
      for (int64_t k = 0; k < n; ++k) m = xp[k] > m ? xp[k] : m;
      T s = 0;
      for (int64_t k = 0; k < n; ++k) {
        yp[k] = std::exp(xp[k] - m);
        s += yp[k];
      }
      const T inv = T(1) / s;
      for (int64_t k = 0; k < n; ++k) yp[k] *= inv;
    }
  };
  parallel_or_serial(pool, outer, body);
}

// x viewed as [outer, n, inner]; the op runs along n.
template <class T>
void softmax_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, Kind kind,
                    ThreadPool* pool) {
  if (kind == Kind::Softmax && inner == 1) return softmax_rows<T>(x, y, outer, n, pool);
  auto body = [&](int64_t begin, int64_t end) {
    std::vector<T> m(static_cast<size_t>(inner)), s(static_cast<size_t>(inner));
    std::vector<int64_t> arg(static_cast<size_t>(inner));
    for (int64_t o = begin; o < end; ++o) {
      const T* xp = x + o * n * inner;
      T* yp = y + o * n * inner;
      for (int64_t j = 0; j < inner; ++j) {
        m[j] = -std::numeric_limits<T>::infinity();
        s[j] = 0;
        arg[j] = 0;
      }
      for (int64_t k = 0; k < n; ++k)
        for (int64_t j = 0; j < inner; ++j)
          if (xp[k * inner + j] > m[j]) {
            m[j] = xp[k * inner + j];
            arg[j] = k;
          }
      if (kind == Kind::Hardmax) {
        for (int64_t k = 0; k < n; ++k)
          for (int64_t j = 0; j < inner; ++j) yp[k * inner + j] = arg[j] == k ? T(1) : T(0);
        continue;
      }
      for (int64_t k = 0; k < n; ++k)
        for (int64_t j = 0; j < inner; ++j) {
          const T e = std::exp(xp[k * inner + j] - m[j]);
          s[j] += e;
          if (kind == Kind::Softmax) yp[k * inner + j] = e;
        }
      if (kind == Kind::Softmax) {
        for (int64_t j = 0; j < inner; ++j) s[j] = T(1) / s[j];
        for (int64_t k = 0; k < n; ++k)
          for (int64_t j = 0; j < inner; ++j) yp[k * inner + j] *= s[j];
      } else {
        for (int64_t j = 0; j < inner; ++j) s[j] = m[j] + std::log(s[j]);
        for (int64_t k = 0; k < n; ++k)
          for (int64_t j = 0; j < inner; ++j) yp[k * inner + j] = xp[k * inner + j] - s[j];
      }
    }
  };
  parallel_or_serial(pool, outer, body);
}

template <Kind K>
void run(KernelContext& c) {
  if (run_half_as_float(c, run<K>)) return;
  const Tensor& X = c.in(0);
  const int64_t r = X.rank();
  int64_t axis = c.node.attr_int("axis", default_axis(c.opset));
  int64_t outer = 1, n = 1, inner = 1;
  if (c.opset < 13) {
    if (axis != r) axis = normalize_axis(axis, r, c.node);
    for (int64_t d = 0; d < r; ++d) (d < axis ? outer : n) *= X.dim(static_cast<int>(d));
  } else {
    axis = normalize_axis(axis, r, c.node);
    for (int64_t d = 0; d < r; ++d)
      (d < axis ? outer : d == axis ? n : inner) *= X.dim(static_cast<int>(d));
  }
  Tensor Y(X.dtype(), X.shape());
  if (n == 0 || X.numel() == 0) {
    c.outputs[0] = Y;
    return;
  }
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_kernel<T>(X.data<T>(), Y.data<T>(), outer, n, inner, K, c.pool);
  });
  c.outputs[0] = Y;
}

Cost cost(const CostContext& c) {
  Cost r;
  // max, subtract, exp (~10), sum, scale per element
  if (!c.in.empty()) r.flops = 14 * nn::numel_d(c.in[0]);
  r.bytes = io_bytes(c);
  return r;
}

}  // namespace

extern const OpDef kOpSoftmax, kOpLogSoftmax, kOpHardmax;
const OpDef kOpSoftmax{"Softmax", "", 1, 1, infer, run<Kind::Softmax>, cost};
const OpDef kOpLogSoftmax{"LogSoftmax", "", 1, 1, infer, run<Kind::LogSoftmax>, cost};
const OpDef kOpHardmax{"Hardmax", "", 1, 1, infer, run<Kind::Hardmax>, cost};

}  // namespace joule::ops
