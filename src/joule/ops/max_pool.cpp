// MaxPool: 1-D/2-D/3-D, strides, pads, auto_pad, ceil_mode, dilations; optional Indices
// output (flat index into X, row-major or, with storage_order=1, column-major spatially).
// Padded cells never win the max; NaN does (as in ONNX Runtime and PyTorch). This is the
// reference kernel; the fast one is kernels/eltwise/pool.cpp.
#include <algorithm>
#include <limits>
#include <vector>

#include "joule/ops/pool_util.h"

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
              if (row[iw] > best || bd < 0 || row[iw] != row[iw]) {  // a NaN wins, and stays
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
