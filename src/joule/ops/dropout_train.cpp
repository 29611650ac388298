// Dropout in training (joule domain):
//   joule.DropoutTrain(X, seed) -> Y, mask: each element kept with probability 1 - ratio
//     (mask 1) and scaled by 1 / (1 - ratio), else 0. The draw for element i is a hash of
//     (seed, stream, i) (splitmix64), so it is the same on any number of threads; the trainer
//     gives every step its own seed and every Dropout node its own `stream`.
//   joule.DropoutGrad(dY, mask) -> dX = dY * mask / (1 - ratio)
#include "joule/ops/nn_util.h"
#include "joule/ops/random_util.h"

namespace joule::ops {
namespace {
using rng::splitmix64;

double read_ratio(const ir::Node& n) {
  const double r = n.attr_float("ratio", 0.5f);
  if (!(r >= 0 && r < 1)) fail(n.where() + ": ratio " + std::to_string(r) + " must be in [0, 1)");
  return r;
}

void infer_train(InferContext& c) {
  c.out(0) = c.in(0);
  if (c.output_types.size() > 1) {
    c.out(1) = c.in(0);
    c.out(1).dtype = DType::UInt8;
  }
}

void run_train(KernelContext& c) {
  const Tensor& X = c.in(0);
  const double ratio = read_ratio(c.node);
  const uint64_t seed = static_cast<uint64_t>(c.in(1).value_as_int(0));
  // Kept when the top 53 bits, as a fraction, are at or above the ratio.
  const uint64_t threshold = static_cast<uint64_t>(ratio * 9007199254740992.0);
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    T* y = c.output(0, X.dtype(), X.shape()).template data<T>();
    uint8_t* m = c.output(1, DType::UInt8, X.shape()).template data<uint8_t>();
    const T scale = static_cast<T>(1.0 / (1.0 - ratio));
    const uint64_t key = splitmix64(seed ^ splitmix64(static_cast<uint64_t>(c.node.attr_int("stream", 0))));
    parallel_or_serial(c.pool, (X.numel() + 4095) / 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin * 4096; i < std::min(X.numel(), end * 4096); ++i) {
        const bool keep = (splitmix64(key ^ static_cast<uint64_t>(i)) >> 11) >= threshold;
        m[i] = keep;
        y[i] = keep ? x[i] * scale : T(0);
      }
    });
  });
}

void infer_grad(InferContext& c) { c.out(0) = c.in(0); }

void run_grad(KernelContext& c) {
  const Tensor& dY = c.in(0);
  const Tensor& M = c.in(1);
  if (M.shape() != dY.shape() || M.dtype() != DType::UInt8)
    fail(c.node.where() + ": mask " + M.describe() + " must be uint8 of dY's shape " + shape_str(dY.shape()));
  const double ratio = read_ratio(c.node);
  visit_floating(dY.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* g = dY.data<T>();
    const uint8_t* m = M.data<uint8_t>();
    T* dx = c.output(0, dY.dtype(), dY.shape()).template data<T>();
    const T scale = static_cast<T>(1.0 / (1.0 - ratio));
    for (int64_t i = 0; i < dY.numel(); ++i) dx[i] = m[i] ? g[i] * scale : T(0);
  });
}

}  // namespace

extern const OpDef kOpDropoutTrain, kOpDropoutGrad;
const OpDef kOpDropoutTrain{"DropoutTrain", "joule", 2, 2, infer_train, run_train};
const OpDef kOpDropoutGrad{"DropoutGrad", "joule", 2, 2, infer_grad, run_grad};

}  // namespace joule::ops
