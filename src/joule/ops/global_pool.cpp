// GlobalAveragePool, GlobalMaxPool, GlobalLpPool: pool each (n, c) plane over all spatial
// dims; output [N, C, 1, ..., 1].
#include <cmath>
#include <limits>

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

enum class Kind { Avg, Max, Lp };

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  ir::TensorType o;
  o.dtype = x.dtype;
  if (x.has_shape) {
    if (x.dims.size() < 2) fail(c.node.where() + ": input rank must be >= 2, got " + x.str());
    o.has_shape = true;
    o.dims = {x.dims[0], x.dims[1]};
    o.dims.resize(x.dims.size(), ir::Dim{1, ""});
  }
  c.out(0) = o;
}

template <class T>
void global_pool(const Tensor& X, Tensor& Y, Kind kind, double pw, ThreadPool* pool) {
  const int64_t planes = X.dim(0) * X.dim(1);
  const int64_t plane = planes == 0 ? 0 : X.numel() / planes;
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const T* xp = x + t * plane;
      if (kind == Kind::Max) {
        T m = -std::numeric_limits<T>::infinity();
        for (int64_t i = 0; i < plane; ++i) m = xp[i] > m || i == 0 || xp[i] != xp[i] ? xp[i] : m;  // NaN wins, and stays
        y[t] = m;
      } else if (kind == Kind::Avg) {
        double s = 0;  // double lanes, reassociated: vectorises, and stays more exact than a float sum
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < plane; ++i) s += static_cast<double>(xp[i]);
        y[t] = static_cast<T>(s / static_cast<double>(plane));
      } else {
        double s = 0;
        for (int64_t i = 0; i < plane; ++i) s += std::pow(std::abs(static_cast<double>(xp[i])), pw);
        y[t] = static_cast<T>(std::pow(s, 1.0 / pw));
      }
    }
  };
  parallel_or_serial(pool, planes, body);
}

template <Kind K>
void run(KernelContext& c) {
  if (run_half_as_float(c, run<K>)) return;
  const Tensor& X = c.in(0);
  if (X.rank() < 2) fail(c.node.where() + ": input rank must be >= 2, got " + X.describe());
  Shape ys = {X.dim(0), X.dim(1)};
  ys.resize(static_cast<size_t>(X.rank()), 1);
  const double pw = static_cast<double>(c.node.attr_float("p", 2.f));
  Tensor Y(X.dtype(), ys);
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    global_pool<T>(X, Y, K, pw, c.pool);
  });
  c.outputs[0] = Y;
}

Cost cost(const CostContext& c) { return nn::per_element_cost(c, 1); }

}  // namespace

extern const OpDef kOpGlobalAveragePool, kOpGlobalMaxPool, kOpGlobalLpPool;
const OpDef kOpGlobalAveragePool{"GlobalAveragePool", "", 1, 1, infer, run<Kind::Avg>, cost};
const OpDef kOpGlobalMaxPool{"GlobalMaxPool", "", 1, 1, infer, run<Kind::Max>, cost};
const OpDef kOpGlobalLpPool{"GlobalLpPool", "", 1, 1, infer, run<Kind::Lp>, cost};

}  // namespace joule::ops
