// LRN: local response normalisation across channels:
// y = x / (bias + alpha / size * sum_{c' in window(c)} x[c']^2) ^ beta, with the window
// [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to [0, C).
#include <cmath>
#include <vector>

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (x.has_shape && x.dims.size() < 2)
    fail(c.node.where() + ": input rank must be >= 2, got " + x.str());
  if (c.node.attr_int("size", 0) <= 0) fail(c.node.where() + ": attribute 'size' must be positive");
  c.out(0) = x;
}

template <class T>
void lrn(const Tensor& X, Tensor& Y, int64_t size, double alpha, double beta, double bias,
         ThreadPool* pool) {
  const int64_t N = X.dim(0), C = X.dim(1);
  const int64_t plane = N * C == 0 ? 0 : X.numel() / (N * C);
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  auto body = [&](int64_t begin, int64_t end) {
    std::vector<double> sq(static_cast<size_t>(plane));
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / C, ch = t % C;
      std::fill(sq.begin(), sq.end(), 0.0);
      for (int64_t c2 = std::max<int64_t>(0, ch - lo); c2 <= std::min(C - 1, ch + hi); ++c2) {
        const T* xp = x + (n * C + c2) * plane;
        for (int64_t i = 0; i < plane; ++i)
          sq[static_cast<size_t>(i)] += static_cast<double>(xp[i]) * static_cast<double>(xp[i]);
      }
      const T* xp = x + t * plane;
      T* yp = y + t * plane;
      const double k = alpha / static_cast<double>(size);
      for (int64_t i = 0; i < plane; ++i)
        yp[i] = static_cast<T>(static_cast<double>(xp[i]) /
                               std::pow(bias + k * sq[static_cast<size_t>(i)], beta));
    }
  };
  parallel_or_serial(pool, N * C, body);
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  const Tensor& X = c.in(0);
  if (X.rank() < 2) fail(c.node.where() + ": input rank must be >= 2, got " + X.describe());
  const int64_t size = c.node.attr_int("size", 0);
  if (size <= 0) fail(c.node.where() + ": attribute 'size' must be positive");
  const double alpha = c.node.attr_float("alpha", 1e-4f), beta = c.node.attr_float("beta", 0.75f);
  const double bias = c.node.attr_float("bias", 1.f);
  Tensor Y(X.dtype(), X.shape());
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    lrn<T>(X, Y, size, alpha, beta, bias, c.pool);
  });
  c.outputs[0] = Y;
}

Cost cost(const CostContext& c) {
  Cost r;
  if (!c.in.empty())
    r.flops = nn::numel_d(c.in[0]) * (2.0 * static_cast<double>(c.node.attr_int("size", 1)) + 13.0);
  r.bytes = io_bytes(c);
  return r;
}

}  // namespace

extern const OpDef kOpLRN;
const OpDef kOpLRN{"LRN", "", 1, 1, infer, run, cost};

}  // namespace joule::ops
