// Gemm: Y = alpha * A' * B' + beta * C, A' = transA ? A^T : A, B' = transB ? B^T : B,
// C (optional from opset 11) unidirectionally broadcast to [M, N].
#include "joule/ops/matmul_util.h"
#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  const ir::TensorType& a = c.in(0);
  const ir::TensorType& b = c.in(1);
  ir::TensorType& o = c.out(0);
  o = ir::TensorType{};
  o.dtype = a.dtype;
  if (c.opset < 11 && !c.has(2)) fail(c.node.where() + ": input C is required before opset 11");
  const bool ta = c.node.attr_int("transA", 0) != 0, tb = c.node.attr_int("transB", 0) != 0;
  if ((a.has_shape && a.dims.size() != 2) || (b.has_shape && b.dims.size() != 2))
    fail(c.node.where() + ": A and B must be 2-D, got " + a.str() + " and " + b.str());
  o.has_shape = true;
  o.dims = {a.has_shape ? a.dims[ta ? 1 : 0] : ir::Dim{},
            b.has_shape ? b.dims[tb ? 0 : 1] : ir::Dim{}};
  if (a.has_shape && b.has_shape) {
    const ir::Dim& ka = a.dims[ta ? 0 : 1];
    const ir::Dim& kb = b.dims[tb ? 1 : 0];
    if (ka.is_static() && kb.is_static() && ka.value != kb.value)
      fail(c.node.where() + ": inner dimensions differ: " + a.str() + " x " + b.str());
  }
}

template <class T>
void gemm(const Tensor& A, const Tensor& B, const Tensor* C, Tensor& Y, bool ta, bool tb,
          double alpha, double beta, ThreadPool* pool) {
  const int64_t M = Y.dim(0), N = Y.dim(1);
  const int64_t K = ta ? A.dim(0) : A.dim(1);
  // Contiguous A' and B' (transposed copies when needed).
  auto transposed = [](const Tensor& t) {
    Tensor r(t.dtype(), {t.dim(1), t.dim(0)});
    const T* s = t.data<T>();
    T* d = r.data<T>();
    const int64_t R = t.dim(0), Cc = t.dim(1);
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < Cc; ++j) d[j * R + i] = s[i * Cc + j];
    return r;
  };
  const Tensor a = ta ? transposed(A) : A;
  const Tensor b = tb ? transposed(B) : B;
  nn::batched_matmul<T>(a.data<T>(), b.data<T>(), Y.data<T>(), {0}, {0}, M, K, N, pool);
  using U = nn::MacType<T>;
  const U al = static_cast<U>(static_cast<T>(alpha)), be = static_cast<U>(static_cast<T>(beta));
  U* y = reinterpret_cast<U*>(Y.data<T>());
  const int64_t n = M * N;
  if (alpha != 1.0)
    for (int64_t i = 0; i < n; ++i) y[i] = al * y[i];
  if (C && beta != 0.0) {
    const U* cp = reinterpret_cast<const U*>(C->data<T>());
    BroadcastIndexer ic(Y.shape(), C->shape());
    for (int64_t i = 0; i < n; ++i) y[i] += be * cp[ic.offset(i)];
  }
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  const Tensor& A = c.in(0);
  const Tensor& B = c.in(1);
  const Tensor* C = c.has(2) ? c.inputs[2] : nullptr;
  if (c.opset < 11 && !C) fail(c.node.where() + ": input C is required before opset 11");
  nn::check_same_dtypes(c, 0, 3);
  if (A.rank() != 2 || B.rank() != 2)
    fail(c.node.where() + ": A and B must be 2-D, got " + A.describe() + " and " + B.describe());
  const bool ta = c.node.attr_int("transA", 0) != 0, tb = c.node.attr_int("transB", 0) != 0;
  const int64_t M = ta ? A.dim(1) : A.dim(0), K = ta ? A.dim(0) : A.dim(1);
  const int64_t Kb = tb ? B.dim(1) : B.dim(0), N = tb ? B.dim(0) : B.dim(1);
  if (K != Kb)
    fail(c.node.where() + ": inner dimensions differ: " + A.describe() + " x " + B.describe());
  if (C) {
    const Shape& cs = C->shape();
    bool ok = cs.size() <= 2;
    for (size_t i = 0; ok && i < cs.size(); ++i) {
      const int64_t want = (cs.size() - i == 1) ? N : M;
      ok = cs[i] == 1 || cs[i] == want;
    }
    if (!ok)
      fail(c.node.where() + ": C " + C->describe() + " cannot be broadcast to [" +
           std::to_string(M) + "," + std::to_string(N) + "]");
  }
  Tensor Y(A.dtype(), {M, N});
  const double alpha = c.node.attr_float("alpha", 1.f), beta = c.node.attr_float("beta", 1.f);
  visit_numeric(A.dtype(), (c.node.where() + " (Gemm)").c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    gemm<T>(A, B, C, Y, ta, tb, alpha, beta, c.pool);
  });
  c.outputs[0] = Y;
}

Cost cost(const CostContext& c) {
  Cost r;
  if (c.in.size() >= 2 && c.in[0].size() == 2 && !c.out.empty()) {
    const bool ta = c.node.attr_int("transA", 0) != 0;
    r.macs = nn::numel_d(c.out[0]) * static_cast<double>(c.in[0][ta ? 0 : 1]);
    const bool has_c =
        c.in.size() >= 3 && c.in_types.size() >= 3 && c.in_types[2] != DType::Undefined;
    r.flops = 2 * r.macs + nn::numel_d(c.out[0]) * (has_c ? 3 : 1);
  }
  r.bytes = io_bytes(c);
  return r;
}

}  // namespace

extern const OpDef kOpGemm;
const OpDef kOpGemm{"Gemm", "", 2, 3, infer, run, cost};

}  // namespace joule::ops
