// Normalisation in training (joule domain):
//   joule.BatchNormTrain(X, scale, B, running_mean, running_var) -> Y, new_mean, new_var, saved_mean, saved_invstd
//     batch statistics per channel (dim 1) over N and the spatial dims; Y = (X - mean) * invstd * scale + B with
//     invstd = 1/sqrt(var + epsilon) (biased var); running stats as PyTorch keeps them:
//     new = (1 - momentum) * old + momentum * batch, the variance unbiased (M / (M - 1)).
//   joule.BatchNormGrad(dY, X, scale, mean, invstd) -> dX, dScale, dBias
//     training=1 (batch statistics): dX = scale * invstd / M * (M dY - sum dY - xhat sum(dY xhat));
//     training=0 (frozen statistics): dX = dY * scale * invstd. dScale = sum dY xhat, dBias = sum dY.
//   joule.LayerNormGrad(dY, X, scale, mean, invstd) -> dX, dScale, dBias
//     over dims [axis, rank) as LayerNormalization (mean and invstd are its outputs 1 and 2):
//     dX = invstd * (g - mean(g) - xhat * mean(g xhat)) with g = dY * scale; dScale, dBias summed over rows
//     (shaped as the normalised dims).
#include <cmath>

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

struct NC {
  int64_t n, c, plane;
};

NC nc_of(const ir::Node& node, const Tensor& x) {
  if (x.rank() < 2) fail(node.where() + ": input rank must be >= 2, got " + x.describe());
  const int64_t n = x.dim(0), c = x.dim(1);
  return {n, c, n * c == 0 ? 0 : x.numel() / (n * c)};
}

void check_vec(const ir::Node& node, const Tensor& t, int64_t c, const char* what) {
  if (t.rank() != 1 || t.dim(0) != c)
    fail(node.where() + ": " + what + " " + t.describe() + " must be [" + std::to_string(c) + "]");
}

// Sum of a row, and of (x - c)^2 / (x - c) * y: accumulated in T over one row (vectorised), the
// rows in double by the callers.
template <class T>
inline double row_sum(const T* x, int64_t n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += x[i];
  return static_cast<double>(s);
}
template <class T>
inline double row_sq_dev(const T* x, int64_t n, T c) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += (x[i] - c) * (x[i] - c);
  return static_cast<double>(s);
}
template <class T>
inline double row_dot_dev(const T* y, const T* x, int64_t n, T c) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += y[i] * (x[i] - c);
  return static_cast<double>(s);
}

void infer_bn_train(InferContext& c) {
  c.out(0) = c.in(0);
  for (size_t i = 1; i < c.output_types.size(); ++i) c.out(i) = c.in(3);
}

void run_bn_train(KernelContext& c) { nn::batch_norm_training(c, c.node.attr_float("momentum", 0.1f), true); }

}  // namespace

void nn::batch_norm_training(KernelContext& c, double mom, bool unbiased) {
  const Tensor& X = c.in(0);
  const NC d = nc_of(c.node, X);
  for (size_t i = 1; i < 5; ++i) check_vec(c.node, c.in(i), d.c, "statistics input");
  const double eps = c.node.attr_float("epsilon", 1e-5f);
  const int64_t m = d.n * d.plane;
  if (m < 2) fail(c.node.where() + ": batch statistics need more than one value per channel, got " + X.describe());
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    const T *sc = c.in(1).template data<T>(), *b = c.in(2).template data<T>();
    const T *rm = c.in(3).template data<T>(), *rv = c.in(4).template data<T>();
    T* y = c.output(0, X.dtype(), X.shape()).template data<T>();
    T* nm = c.output(1, X.dtype(), {d.c}).template data<T>();
    T* nv = c.output(2, X.dtype(), {d.c}).template data<T>();
    Tensor saved_mean(X.dtype(), {d.c}), saved_inv(X.dtype(), {d.c});
    T* sm = c.outputs.size() > 3 ? c.output(3, X.dtype(), {d.c}).template data<T>() : saved_mean.template data<T>();
    T* si = c.outputs.size() > 4 ? c.output(4, X.dtype(), {d.c}).template data<T>() : saved_inv.template data<T>();
    parallel_or_serial(c.pool, d.c, [&](int64_t begin, int64_t end) {
      for (int64_t ch = begin; ch < end; ++ch) {
        double s = 0, ss = 0;
        for (int64_t n = 0; n < d.n; ++n) s += row_sum(x + (n * d.c + ch) * d.plane, d.plane);
        const double mean = s / static_cast<double>(m);
        for (int64_t n = 0; n < d.n; ++n) ss += row_sq_dev(x + (n * d.c + ch) * d.plane, d.plane, static_cast<T>(mean));
        const double var = ss / static_cast<double>(m), inv = 1.0 / std::sqrt(var + eps);
        const T a = static_cast<T>(inv * static_cast<double>(sc[ch]));
        const T bb = static_cast<T>(static_cast<double>(b[ch]) - mean * inv * static_cast<double>(sc[ch]));
        for (int64_t n = 0; n < d.n; ++n) {
          const T* p = x + (n * d.c + ch) * d.plane;
          T* q = y + (n * d.c + ch) * d.plane;
          for (int64_t i = 0; i < d.plane; ++i) q[i] = p[i] * a + bb;
        }
        nm[ch] = static_cast<T>((1 - mom) * static_cast<double>(rm[ch]) + mom * mean);
        nv[ch] = static_cast<T>((1 - mom) * static_cast<double>(rv[ch]) +
                                mom * (unbiased ? var * static_cast<double>(m) / static_cast<double>(m - 1) : var));
        sm[ch] = static_cast<T>(mean);
        si[ch] = static_cast<T>(inv);
      }
    });
  });
}

namespace {

void infer_bn_grad(InferContext& c) {
  c.out(0) = c.in(1);
  for (size_t i = 1; i < c.output_types.size(); ++i) c.out(i) = c.in(2);
}

void run_bn_grad(KernelContext& c) {
  const Tensor& dY = c.in(0);
  const Tensor& X = c.in(1);
  if (dY.shape() != X.shape()) fail(c.node.where() + ": dY " + dY.describe() + " and X " + X.describe() + " differ");
  const NC d = nc_of(c.node, X);
  for (size_t i = 2; i < 5; ++i) check_vec(c.node, c.in(i), d.c, "input");
  nn::check_same_dtypes(c, 0, 5);
  const bool training = c.node.attr_int("training", 1) != 0;
  const double m = static_cast<double>(d.n * d.plane);
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *dy = dY.data<T>(), *x = X.data<T>();
    const T *sc = c.in(2).template data<T>(), *mu = c.in(3).template data<T>(), *is = c.in(4).template data<T>();
    T* dx = c.output(0, X.dtype(), X.shape()).template data<T>();
    T* dsc = c.output(1, X.dtype(), {d.c}).template data<T>();
    T* db = c.output(2, X.dtype(), {d.c}).template data<T>();
    parallel_or_serial(c.pool, d.c, [&](int64_t begin, int64_t end) {
      for (int64_t ch = begin; ch < end; ++ch) {
        const double mean = static_cast<double>(mu[ch]), inv = static_cast<double>(is[ch]);
        double sdy = 0, sdyx = 0;
        for (int64_t n = 0; n < d.n; ++n) {
          const int64_t o = (n * d.c + ch) * d.plane;
          sdy += row_sum(dy + o, d.plane);
          sdyx += row_dot_dev(dy + o, x + o, d.plane, static_cast<T>(mean));
        }
        sdyx *= inv;  // sum dY * xhat
        dsc[ch] = static_cast<T>(sdyx);
        db[ch] = static_cast<T>(sdy);
        const double k = static_cast<double>(sc[ch]) * inv;
        // training: dX = k/m (m dY - sum dY - xhat sum(dY xhat)) = a dY + b X + c; frozen: k dY.
        const T a = static_cast<T>(k);
        const T b = training ? static_cast<T>(-k / m * inv * sdyx) : T(0);
        const T cc = training ? static_cast<T>(-k / m * sdy + k / m * inv * sdyx * mean) : T(0);
        for (int64_t n = 0; n < d.n; ++n) {
          const int64_t o = (n * d.c + ch) * d.plane;
          for (int64_t i = 0; i < d.plane; ++i) dx[o + i] = a * dy[o + i] + b * x[o + i] + cc;
        }
      }
    });
  });
}

// LayerNorm: rows of `inner` elements over dims [axis, rank).
void infer_ln_grad(InferContext& c) {
  c.out(0) = c.in(1);
  for (size_t i = 1; i < c.output_types.size(); ++i) c.out(i) = c.in(2);
}

void run_ln_grad(KernelContext& c) {
  const Tensor& dY = c.in(0);
  const Tensor& X = c.in(1);
  const Tensor& S = c.in(2);
  if (dY.shape() != X.shape()) fail(c.node.where() + ": dY " + dY.describe() + " and X " + X.describe() + " differ");
  const int64_t axis = normalize_axis(c.node.attr_int("axis", -1), X.rank(), c.node);
  const Shape norm(X.shape().begin() + axis, X.shape().end());
  const int64_t inner = shape_numel(norm), outer = inner == 0 ? 0 : X.numel() / inner;
  if (S.shape() != norm) fail(c.node.where() + ": scale " + S.describe() + " must have the normalised shape " + shape_str(norm));
  if (c.in(3).numel() != outer || c.in(4).numel() != outer)
    fail(c.node.where() + ": mean and invstd must hold one value per row (" + std::to_string(outer) + ")");
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *dy = dY.data<T>(), *x = X.data<T>(), *sc = S.data<T>();
    const Tensor mean = c.in(3).dtype() == DType::Float64 ? c.in(3) : c.in(3).cast(DType::Float64);
    const Tensor invs = c.in(4).dtype() == DType::Float64 ? c.in(4) : c.in(4).cast(DType::Float64);
    const double *mu = mean.data<double>(), *is = invs.data<double>();
    T* dx = c.output(0, X.dtype(), X.shape()).template data<T>();
    const int chunks = c.pool ? c.pool->threads() : 1;
    std::vector<std::vector<double>> part_s(static_cast<size_t>(chunks), std::vector<double>(static_cast<size_t>(inner))),
        part_b = part_s;
    parallel_or_serial(c.pool, chunks, [&](int64_t cb, int64_t ce) {
      for (int64_t k = cb; k < ce; ++k) {
        std::vector<double>& ps = part_s[static_cast<size_t>(k)];
        std::vector<double>& pb = part_b[static_cast<size_t>(k)];
        for (int64_t r = outer * k / chunks; r < outer * (k + 1) / chunks; ++r) {
          const T *dyr = dy + r * inner, *xr = x + r * inner;
          T* dxr = dx + r * inner;
          double sg = 0, sgx = 0;
          for (int64_t j = 0; j < inner; ++j) {
            const double xhat = (static_cast<double>(xr[j]) - mu[r]) * is[r];
            const double g = static_cast<double>(dyr[j]) * static_cast<double>(sc[j]);
            sg += g;
            sgx += g * xhat;
            ps[j] += static_cast<double>(dyr[j]) * xhat;
            pb[j] += static_cast<double>(dyr[j]);
          }
          const double mg = sg / static_cast<double>(inner), mgx = sgx / static_cast<double>(inner);
          for (int64_t j = 0; j < inner; ++j) {
            const double xhat = (static_cast<double>(xr[j]) - mu[r]) * is[r];
            const double g = static_cast<double>(dyr[j]) * static_cast<double>(sc[j]);
            dxr[j] = static_cast<T>(is[r] * (g - mg - xhat * mgx));
          }
        }
      }
    });
    T* dsc = c.output(1, X.dtype(), norm).template data<T>();
    T* db = c.output(2, X.dtype(), norm).template data<T>();
    for (int64_t j = 0; j < inner; ++j) {
      double s = 0, b = 0;
      for (int k = 0; k < chunks; ++k) {
        s += part_s[static_cast<size_t>(k)][static_cast<size_t>(j)];
        b += part_b[static_cast<size_t>(k)][static_cast<size_t>(j)];
      }
      dsc[j] = static_cast<T>(s);
      db[j] = static_cast<T>(b);
    }
  });
}

Cost bn_cost(const CostContext& c) { return nn::per_element_cost(c, 8); }

}  // namespace

extern const OpDef kOpBatchNormTrain, kOpBatchNormGrad, kOpLayerNormGrad;
const OpDef kOpBatchNormTrain{"BatchNormTrain", "joule", 5, 5, infer_bn_train, run_bn_train, bn_cost};
const OpDef kOpBatchNormGrad{"BatchNormGrad", "joule", 5, 5, infer_bn_grad, run_bn_grad, bn_cost};
const OpDef kOpLayerNormGrad{"LayerNormGrad", "joule", 5, 5, infer_ln_grad, run_ln_grad, bn_cost};

}  // namespace joule::ops
