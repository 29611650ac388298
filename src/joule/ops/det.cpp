// Det: the determinant of each square matrix in X [*, M, M] (output [*]), by LU decomposition
// with partial pivoting in double precision (a zero pivot column gives 0). float16/bfloat16,
// float32 and float64; the matrices of a batch are split over the pool.
#include <cmath>
#include <algorithm>
#include <utility>
#include <vector>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (!x.has_shape) {
    c.out(0) = movement::unknown_rank(x.dtype);
    return;
  }
  if (x.dims.size() < 2) fail(c.node.where() + ": input must have rank >= 2");
  c.out(0) = movement::make_type(x.dtype, std::vector<ir::Dim>(x.dims.begin(), x.dims.end() - 2));
}

double determinant(double* a, int64_t m) {  // destroys a (row-major m x m)
  double det = 1;
  for (int64_t k = 0; k < m; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < m; ++i)
      if (std::fabs(a[i * m + k]) > std::fabs(a[p * m + k])) p = i;
    if (a[p * m + k] == 0) return 0;
    if (p != k) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[k * m + j], a[p * m + j]);
      det = -det;
    }
    const double pivot = a[k * m + k];
    det *= pivot;
    for (int64_t i = k + 1; i < m; ++i) {
      const double f = a[i * m + k] / pivot;
      for (int64_t j = k + 1; j < m; ++j) a[i * m + j] -= f * a[k * m + j];
    }
  }
  return det;
}

void run(KernelContext& c) {
  const Tensor& X = c.in(0);
  if (!is_floating(X.dtype())) fail(c.node.where() + ": X must be floating point, got " + X.describe());
  if (X.rank() < 2 || X.dim(-1) != X.dim(-2))
    fail(c.node.where() + ": X must be [*, M, M], got " + X.describe());
  const int64_t m = X.dim(-1);
  const Shape out_shape(X.shape().begin(), X.shape().end() - 2);
  const Tensor xd = X.cast(DType::Float64);
  Tensor y(DType::Float64, out_shape);
  const double* px = xd.data<double>();
  double* py = y.data<double>();
  parallel_or_serial(c.pool, y.numel(), [&](int64_t begin, int64_t end) {
    std::vector<double> a(static_cast<size_t>(m * m));
    for (int64_t b = begin; b < end; ++b) {
      std::copy(px + b * m * m, px + (b + 1) * m * m, a.begin());
      py[b] = determinant(a.data(), m);
    }
  });
  c.outputs[0] = y.cast(X.dtype());
}

}  // namespace

extern const OpDef kOpDet;
const OpDef kOpDet{"Det", "", 1, 1, infer, run};

}  // namespace joule::ops
