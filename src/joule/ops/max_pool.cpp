// MaxPool: 1-D/2-D/3-D, strides, pads, auto_pad, ceil_mode, dilations; optional Indices
// output (flat index into X, row-major or, with storage_order=1, column-major spatially).
// Padded cells never win the max.
#include <algorithm>
#include <limits>
#include <vector>

#include "joule/core/cpu_features.h"
#include "joule/ops/pool_util.h"
#include "joule/ops/vec_math.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) { infer_pool(c, c.opset >= 10); }

std::string check(const ir::Node& n, int64_t) {
  const int64_t so = n.attr_int("storage_order", 0);
  if (so != 0 && so != 1) return "storage_order=" + std::to_string(so);
  return "";
}

template <class T>
void max_pool(const Tensor& X, Tensor& Y, Tensor* I, const SpatialPlan& p, bool col_major,
              ThreadPool* pool) {
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  int64_t* ind = I ? I->data<int64_t>() : nullptr;
  const int64_t in_plane = p.in_size(), out_plane = p.out_size();
  const int nsp = X.rank() - 2;
  for_each_pool_window(
      p, X.dim(0) * X.dim(1), pool, [&](int64_t t, int64_t o, const PoolWindow& w) {
        const T* xp = x + t * in_plane;
        T best = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                      : std::numeric_limits<T>::lowest();
        int64_t bd = -1, bh = 0, bw = 0;
        for (int64_t a = 0, id = w.first[0]; a < w.count[0]; ++a, id += w.step[0])
          for (int64_t b = 0, ih = w.first[1]; b < w.count[1]; ++b, ih += w.step[1]) {
            const T* row = xp + (id * p.in[1] + ih) * p.in[2];
            for (int64_t e = 0, iw = w.first[2]; e < w.count[2]; ++e, iw += w.step[2])
              if (row[iw] > best || bd < 0) {
                best = row[iw];
                bd = id, bh = ih, bw = iw;
              }
          }
        y[t * out_plane + o] = best;
        if (ind) {
          int64_t idx = -1;
          if (bd >= 0) {
            if (!col_major) {
              idx = (bd * p.in[1] + bh) * p.in[2] + bw;
            } else {
              // column-major over the real spatial dims (fastest-varying first)
              const int64_t pos[3] = {bd, bh, bw};
              idx = 0;
              int64_t mul = 1;
              for (int j = 3 - nsp; j < 3; ++j) {
                idx += pos[j] * mul;
                mul *= p.in[j];
              }
            }
            idx += t * in_plane;
          }
          ind[t * out_plane + o] = idx;
        }
      });
}

// Output columns [j0, j1) of one output row whose windows lie wholly inside the input row:
// acc[j] = max over the valid kernel rows `rows` (k of them) and kernel columns of
// row[j*S + b*d]. Loops run kernel row, kernel column, then output column, so the inner loop
// vectorises along the output row (S, the stride, is a template parameter: 1, 2 or 0 for any).
// Each output still sees its cells in the same order as the scalar loop, so NaNs behave the same.
template <class T, int S>
JOULE_ALWAYS_INLINE void max_rows_body(const T* const* rows, int64_t nrows, int64_t kw, int64_t d, int64_t s,
                                       int64_t pad, T* acc, int64_t j0, int64_t j1) {
  const int64_t st = S ? S : s;
  for (int64_t a = 0; a < nrows; ++a)
    for (int64_t b = 0; b < kw; ++b) {
      const T* r = rows[a];
      const int64_t off = b * d - pad;  // j*st + off >= 0 for the columns given
      if (a == 0 && b == 0) {
        for (int64_t j = j0; j < j1; ++j) acc[j] = r[j * st + off];
      } else {
        for (int64_t j = j0; j < j1; ++j) {
          const T v = r[j * st + off];
          acc[j] = v > acc[j] ? v : acc[j];
        }
      }
    }
}
template <class T, int S>
void max_rows(const T* const* rows, int64_t nrows, int64_t kw, int64_t d, int64_t s, int64_t pad, T* acc,
              int64_t j0, int64_t j1) {
  max_rows_body<T, S>(rows, nrows, kw, d, s, pad, acc, j0, j1);
}
template <class T, int S>
JOULE_AVX512 void max_rows_avx512(const T* const* rows, int64_t nrows, int64_t kw, int64_t d, int64_t s,
                                  int64_t pad, T* acc, int64_t j0, int64_t j1) {
  max_rows_body<T, S>(rows, nrows, kw, d, s, pad, acc, j0, j1);
}

template <class T>
using MaxRowsFn = void (*)(const T* const*, int64_t, int64_t, int64_t, int64_t, int64_t, T*, int64_t, int64_t);

template <class T>
MaxRowsFn<T> pick_max_rows(int64_t stride) {
  const bool v = cpu_features().avx512;
  if (stride == 1) return v ? max_rows_avx512<T, 1> : max_rows<T, 1>;
  if (stride == 2) return v ? max_rows_avx512<T, 2> : max_rows<T, 2>;
  return v ? max_rows_avx512<T, 0> : max_rows<T, 0>;
}

// The common case (float32, or the uint8/int8 codes of a quantized model; 1-D/2-D, no Indices
// output) without the per-window callback of the general path: per plane, per output row, the
// valid kernel rows are clipped to the input once; the columns whose windows lie inside the
// row go through max_rows (vectorised), the few at the edges through a clipped scalar loop.
template <class T>
void max_pool_2d(const Tensor& X, Tensor& Y, const SpatialPlan& p, ThreadPool* pool) {
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  const int64_t ih = p.in[1], iw = p.in[2], oh = p.out[1], ow = p.out[2];
  const int64_t sw = p.s[2], dw = p.d[2], kw = p.k[2];
  // Interior columns: w0 = j*sw - pad >= 0 and w0 + (kw-1)*dw <= iw-1.
  const int64_t j_lo = std::min(ow, (p.pb[2] + sw - 1) / sw);
  const int64_t last = iw - 1 - (kw - 1) * dw + p.pb[2];  // j*sw <= last
  const int64_t j_hi = std::max(j_lo, last < 0 ? 0 : std::min(ow, last / sw + 1));
  const MaxRowsFn<T> rows_fn = pick_max_rows<T>(sw);
  auto body = [&](int64_t t0, int64_t t1) {
    std::vector<const T*> rows(static_cast<size_t>(p.k[1]));
    for (int64_t t = t0; t < t1; ++t) {
      const T* xp = x + t * ih * iw;
      T* yp = y + t * oh * ow;
      for (int64_t i = 0; i < oh; ++i) {
        const int64_t h0 = i * p.s[1] - p.pb[1];
        // kernel rows a with 0 <= h0 + a*d < ih
        const int64_t a0 = h0 >= 0 ? 0 : (-h0 + p.d[1] - 1) / p.d[1];
        const int64_t a1 = std::min<int64_t>(p.k[1], h0 >= ih ? 0 : (ih - 1 - h0) / p.d[1] + 1);
        int64_t nrows = 0;
        for (int64_t a = a0; a < a1; ++a) rows[static_cast<size_t>(nrows++)] = xp + (h0 + a * p.d[1]) * iw;
        if (nrows > 0 && j_lo < j_hi) rows_fn(rows.data(), nrows, kw, dw, sw, p.pb[2], yp + i * ow, j_lo, j_hi);
        for (int64_t j = 0; j < ow; ++j) {
          if (nrows > 0 && j == j_lo && j_lo < j_hi) {
            j = j_hi - 1;
            continue;
          }
          const int64_t w0 = j * sw - p.pb[2];
          const int64_t b0 = w0 >= 0 ? 0 : (-w0 + dw - 1) / dw;
          const int64_t b1 = std::min<int64_t>(kw, w0 >= iw ? 0 : (iw - 1 - w0) / dw + 1);
          // (No valid cell: -inf for float, the lowest code for integers.)
          T best = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                        : std::numeric_limits<T>::lowest();
          if (a0 < a1 && b0 < b1) {
            // The first valid cell starts the max (so a NaN there wins, as in the general
            // path); the rest is a branch-free max.
            best = xp[(h0 + a0 * p.d[1]) * iw + w0 + b0 * dw];
            for (int64_t a = a0; a < a1; ++a) {
              const T* row = xp + (h0 + a * p.d[1]) * iw + w0;
              for (int64_t b = b0; b < b1; ++b) {
                const T v = row[b * dw];
                best = v > best ? v : best;
              }
            }
          }
          yp[i * ow + j] = best;
        }
      }
    }
  };
  const int64_t planes = X.dim(0) * X.dim(1);
  parallel_or_serial(pool, planes, body);
}

void run(KernelContext& c) {
  const Tensor& X = c.in(0);
  const std::string why = check(c.node, c.opset);
  if (!why.empty()) fail_unsupported(c.node.where() + ": " + why);
  Shape ys;
  const SpatialPlan p = plan_pool(c.node, X, c.opset >= 10, &ys);
  const bool want_idx = c.outputs.size() > 1 && !c.node.outputs[1].empty();
  Tensor Y(X.dtype(), ys);
  Tensor I;
  if (want_idx) I = Tensor(DType::Int64, ys);
  const bool col = c.node.attr_int("storage_order", 0) == 1;
  if (!want_idx && X.rank() <= 4 && p.k[0] == 1 && p.in[0] == 1) {
    bool done = true;
    if (X.dtype() == DType::Float32) max_pool_2d<float>(X, Y, p, c.pool);
    else if (X.dtype() == DType::UInt8) max_pool_2d<uint8_t>(X, Y, p, c.pool);
    else if (X.dtype() == DType::Int8) max_pool_2d<int8_t>(X, Y, p, c.pool);
    else done = false;
    if (done) {
      c.outputs[0] = Y;
      return;
    }
  }
  auto go = [&](auto tag) {
    using T = typename decltype(tag)::type;
    max_pool<T>(X, Y, want_idx ? &I : nullptr, p, col, c.pool);
  };
  switch (X.dtype()) {
    case DType::Float32:
      go(TypeTag<float>{});
      break;
    case DType::Float64:
      go(TypeTag<double>{});
      break;
    case DType::Int8:
      go(TypeTag<int8_t>{});
      break;
    case DType::UInt8:
      go(TypeTag<uint8_t>{});
      break;
    case DType::Int32:
      go(TypeTag<int32_t>{});
      break;
    case DType::Int64:
      go(TypeTag<int64_t>{});
      break;
    case DType::Float16:
    case DType::BFloat16: {
      // max is exact in float: pool a float copy and convert back
      const Tensor xf = X.cast(DType::Float32);
      Tensor yf(DType::Float32, ys);
      max_pool<float>(xf, yf, want_idx ? &I : nullptr, p, col, c.pool);
      Y = yf.cast(X.dtype());
      break;
    }
    default:
      fail_unsupported(c.node.where() + ": dtype " + dtype_name(X.dtype()));
  }
  c.outputs[0] = Y;
  if (want_idx) c.outputs[1] = I;
}

}  // namespace

extern const OpDef kOpMaxPool;
const OpDef kOpMaxPool{"MaxPool", "", 1, 1, infer, run, pool_cost, check};

}  // namespace joule::ops
