// InstanceNormalization: y = scale[c] * (x - mean) / sqrt(var + epsilon) + B[c], with mean and
// (biased) variance over the spatial dims of each (n, c) plane.
#include <cmath>

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (x.has_shape && x.dims.size() < 2)
    fail(c.node.where() + ": input rank must be >= 2, got " + x.str());
  for (size_t i = 1; i < 3; ++i) {
    const ir::TensorType& p = c.in(i);
    if (p.has_shape && p.dims.size() != 1)
      fail(c.node.where() + ": input " + std::to_string(i) + " must be 1-D");
  }
  c.out(0) = x;
}

template <class T>
void instance_norm(const Tensor& X, const Tensor& S, const Tensor& B, Tensor& Y, double eps,
                   ThreadPool* pool) {
  const int64_t N = X.dim(0), C = X.dim(1);
  const int64_t plane = N * C == 0 ? 0 : X.numel() / (N * C);
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t ch = t % C;
      const T* xp = x + t * plane;
      T* yp = y + t * plane;
      double s = 0;
      for (int64_t i = 0; i < plane; ++i) s += static_cast<double>(xp[i]);
      const double mean = s / static_cast<double>(plane);
      double v = 0;
      for (int64_t i = 0; i < plane; ++i) {
        const double d = static_cast<double>(xp[i]) - mean;
        v += d * d;
      }
      const double a = S.value_as_double(ch) / std::sqrt(v / static_cast<double>(plane) + eps);
      const double b = B.value_as_double(ch) - mean * a;
      for (int64_t i = 0; i < plane; ++i)
        yp[i] = static_cast<T>(static_cast<double>(xp[i]) * a + b);
    }
  };
  parallel_or_serial(pool, N * C, body);
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  const Tensor& X = c.in(0);
  const Tensor& S = c.in(1);
  const Tensor& B = c.in(2);
  if (X.rank() < 2) fail(c.node.where() + ": input rank must be >= 2, got " + X.describe());
  for (const Tensor* p : {&S, &B})
    if (p->rank() != 1 || p->dim(0) != X.dim(1))
      fail(c.node.where() + ": scale/bias " + p->describe() + " does not match " +
           std::to_string(X.dim(1)) + " channels");
  const double eps = c.node.attr_float("epsilon", 1e-5f);
  Tensor Y(X.dtype(), X.shape());
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    instance_norm<T>(X, S, B, Y, eps, c.pool);
  });
  c.outputs[0] = Y;
}

Cost cost(const CostContext& c) { return nn::per_element_cost(c, 6); }

}  // namespace

extern const OpDef kOpInstanceNormalization;
const OpDef kOpInstanceNormalization{"InstanceNormalization", "", 3, 3, infer, run, cost};

}  // namespace joule::ops
