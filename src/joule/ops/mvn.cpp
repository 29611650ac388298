// MeanVarianceNormalization: y = (x - mean) / (sqrt(var) + 1e-9) with mean and (biased)
// variance over `axes` (default [0, 2, 3]), as the ONNX function body defines it.
#include <cmath>
#include <vector>

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

std::vector<bool> reduced_axes(const ir::Node& n, int64_t rank) {
  std::vector<bool> f(static_cast<size_t>(rank), false);
  for (int64_t a : n.attr_ints("axes", {0, 2, 3}))
    f[static_cast<size_t>(normalize_axis(a, rank, n))] = true;
  return f;
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (x.has_shape) reduced_axes(c.node, static_cast<int64_t>(x.dims.size()));
  c.out(0) = x;
}

template <class T>
void mvn(const Tensor& X, Tensor& Y, const Shape& stat_shape) {
  const int64_t n = X.numel(), ns = shape_numel(stat_shape);
  const double cnt = ns == 0 ? 0.0 : static_cast<double>(n) / static_cast<double>(ns);
  BroadcastIndexer ix(X.shape(), stat_shape);
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = ix.offset(i);
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  std::vector<double> mean(static_cast<size_t>(ns), 0.0), var(static_cast<size_t>(ns), 0.0);
  for (int64_t i = 0; i < n; ++i)
    mean[static_cast<size_t>(idx[static_cast<size_t>(i)])] += static_cast<double>(x[i]);
  for (double& m : mean) m /= cnt;
  for (int64_t i = 0; i < n; ++i) {
    const size_t s = static_cast<size_t>(idx[static_cast<size_t>(i)]);
    const double d = static_cast<double>(x[i]) - mean[s];
    var[s] += d * d;
  }
  for (double& v : var) v = std::sqrt(v / cnt) + 1e-9;
  for (int64_t i = 0; i < n; ++i) {
    const size_t s = static_cast<size_t>(idx[static_cast<size_t>(i)]);
    y[i] = static_cast<T>((static_cast<double>(x[i]) - mean[s]) / var[s]);
  }
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  const Tensor& X = c.in(0);
  const std::vector<bool> f = reduced_axes(c.node, X.rank());
  Shape stat = X.shape();
  for (size_t d = 0; d < stat.size(); ++d)
    if (f[d]) stat[d] = 1;
  Tensor Y(X.dtype(), X.shape());
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    mvn<T>(X, Y, stat);
  });
  c.outputs[0] = Y;
}

Cost cost(const CostContext& c) { return nn::per_element_cost(c, 6); }

}  // namespace

extern const OpDef kOpMeanVarianceNormalization;
const OpDef kOpMeanVarianceNormalization{"MeanVarianceNormalization", "", 1, 1, infer, run, cost};

}  // namespace joule::ops
