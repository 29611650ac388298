// Softmax, LogSoftmax, Hardmax. Before opset 13 the input is coerced to 2-D at `axis`
// (default 1) and the op runs over the flattened trailing part; from opset 13 it runs along
// the single dim `axis` (default -1). Softmax subtracts the max for numerical stability.
#include <immintrin.h>

#include <cmath>
#include <limits>
#include <vector>

#include "joule/core/cpu_features.h"
#include "joule/ops/nn_util.h"
#include "joule/ops/vec_math.h"

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
// in the same order as the general loop below, without its per-row index vectors (float64;
// float32 has the vectorised specialisation below).
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

// Float32 rows, vectorised (ops/vec_math.h exp; sums and maxima reassociated across 16
// lanes). Loops run over whole blocks of 16 with a fixed inner trip count, and the last partial
// block is padded (with -inf, whose exp is 0), so rows of any length stay on vector code:
// attention rows (65, 197, ...) rarely divide by 16, and a scalar remainder of exps cost more
// than the vector part.
JOULE_ALWAYS_INLINE void softmax_row_body(const float* x, float* y, int64_t n) {
  constexpr int64_t L = 16;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t nf = n / L * L, nt = n - nf;
  float tail[L];
  for (int64_t l = 0; l < L; ++l) tail[l] = l < nt ? x[nf + l] : kNegInf;
  float mv[L];
  for (int64_t l = 0; l < L; ++l) mv[l] = tail[l];
  for (int64_t i = 0; i < nf; i += L)
    for (int64_t l = 0; l < L; ++l) mv[l] = x[i + l] > mv[l] ? x[i + l] : mv[l];
  float m = kNegInf;
  for (int64_t l = 0; l < L; ++l) m = mv[l] > m ? mv[l] : m;
  float sv[L];
  for (int64_t l = 0; l < L; ++l) {
    tail[l] = vec::exp(tail[l] - m);
    sv[l] = tail[l];
  }
  for (int64_t i = 0; i < nf; i += L)
    for (int64_t l = 0; l < L; ++l) {
      const float e = vec::exp(x[i + l] - m);
      y[i + l] = e;
      sv[l] += e;
    }
  float s = 0;
  for (int64_t l = 0; l < L; ++l) s += sv[l];
  const float inv = 1.f / s;
  for (int64_t i = 0; i < nf; i += L)
    for (int64_t l = 0; l < L; ++l) y[i + l] *= inv;
  for (int64_t l = 0; l < nt; ++l) y[nf + l] = tail[l] * inv;
}
void softmax_row(const float* x, float* y, int64_t n) { softmax_row_body(x, y, n); }

// (GCC 12 warns about _mm512_undefined_* inside its own intrinsics headers.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The same arithmetic in AVX-512 intrinsics (GCC keeps the max reduction above in 16 scalar
// registers): e^x as vec::exp (same reduction and polynomial; 2^n by scalef), the partial last
// block through masked loads and stores instead of a padded copy.
JOULE_AVX512 inline __m512 exp16(__m512 x) {
  const __mmask16 under = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_LT_OQ);
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.4426950408889634f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.4286068203094173e-06f), r);
  __m512 p = _mm512_set1_ps(1.f / 5040);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 720));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~under), _mm512_scalef_ps(p, n));
}

JOULE_AVX512 void softmax_row_avx512(const float* x, float* y, int64_t n) {
  const int64_t nf = n / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - nf)) - 1);
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 mv = _mm512_mask_loadu_ps(ninf, tail, x + nf);
  for (int64_t i = 0; i < nf; i += 16) mv = _mm512_max_ps(mv, _mm512_loadu_ps(x + i));
  const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mv));
  __m512 sv = _mm512_setzero_ps();
  for (int64_t i = 0; i < nf; i += 16) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), m));
    _mm512_storeu_ps(y + i, e);
    sv = _mm512_add_ps(sv, e);
  }
  const __m512 et = _mm512_maskz_mov_ps(tail, exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(ninf, tail, x + nf), m)));
  sv = _mm512_add_ps(sv, et);
  const __m512 inv = _mm512_set1_ps(1.f / _mm512_reduce_add_ps(sv));
  for (int64_t i = 0; i < nf; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(y + i), inv));
  _mm512_mask_storeu_ps(y + nf, tail, _mm512_mul_ps(et, inv));
}
#pragma GCC diagnostic pop

template <>
void softmax_rows<float>(const float* x, float* y, int64_t outer, int64_t n, ThreadPool* pool) {
  const auto row = cpu_features().avx512 ? softmax_row_avx512 : softmax_row;
  parallel_or_serial(pool, outer, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) row(x + o * n, y + o * n, n);
  });
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
