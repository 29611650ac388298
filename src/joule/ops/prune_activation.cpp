// PruneActivation (domain "joule"): activation pruning as MASE applies it, which `joule prune
// --activations R` (prune::prune_graph) puts in front of a layer's data input. Attribute `ratio`
// in [0, 1): in each sample (index 0 of the first dimension; an input of rank 0 or 1 is one
// sample) the floor(ratio * n) values of smallest magnitude become 0 at run time; ties at the
// threshold are zeroed in index order until that count is reached; NaN counts as the largest
// magnitude and is never zeroed. float32 and float64 (the training graphs' gradient checks).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "joule/ops/elementwise_util.h"

namespace joule::ops {
namespace {

std::string check(const ir::Node& n, int64_t) {
  const float r = n.attr_float("ratio", 0.5f);
  if (!(r >= 0.f && r < 1.f)) return "ratio must be in [0, 1)";
  return "";
}

template <class T>
T magnitude(T v) { return std::isnan(v) ? std::numeric_limits<T>::infinity() : std::abs(v); }

template <class T>
void prune(const T* px, T* py, int64_t samples, int64_t m, int64_t k) {
  std::vector<T> mag(static_cast<size_t>(k > 0 ? m : 0));
  for (int64_t s = 0; s < samples; ++s, px += m, py += m) {
    std::copy(px, px + m, py);
    if (k == 0) continue;
    for (int64_t i = 0; i < m; ++i) mag[static_cast<size_t>(i)] = magnitude(px[i]);
    std::nth_element(mag.begin(), mag.begin() + (k - 1), mag.end());
    const T t = mag[static_cast<size_t>(k - 1)];  // the k-th smallest magnitude
    int64_t zeroed = 0;
    for (int64_t i = 0; i < m; ++i)
      if (magnitude(px[i]) < t) {
        py[i] = 0;
        ++zeroed;
      }
    for (int64_t i = 0; i < m && zeroed < k; ++i)
      if (magnitude(px[i]) == t && !std::isnan(px[i])) {
        py[i] = 0;
        ++zeroed;
      }
  }
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  JOULE_CHECK(x.dtype() == DType::Float32 || x.dtype() == DType::Float64,
              c.node.where() + ": PruneActivation takes float32 or float64, got " + x.describe());
  const double ratio = c.node.attr_float("ratio", 0.5f);
  Tensor& y = c.output(0, x.dtype(), x.shape());
  const int64_t samples = x.rank() >= 2 ? x.shape()[0] : 1;
  const int64_t m = samples > 0 ? x.numel() / samples : 0;
  const int64_t k = static_cast<int64_t>(std::floor(ratio * static_cast<double>(m)));
  if (x.dtype() == DType::Float32)
    prune(x.data<float>(), y.data<float>(), samples, m, k);
  else
    prune(x.data<double>(), y.data<double>(), samples, m, k);
}

Cost cost(const CostContext& c) {
  Cost r;
  if (c.in.empty()) return r;
  double n = 1;
  for (int64_t d : c.in[0]) n *= static_cast<double>(d);
  r.flops = 3 * n;      // magnitudes, selection, compare
  r.bytes = 4 * 3 * n;  // read, the magnitudes, write
  return r;
}

}  // namespace

extern const OpDef kOpPruneActivation;
const OpDef kOpPruneActivation{"PruneActivation", "joule", 1, 1, infer_same_type, run, cost, check};

}  // namespace joule::ops
