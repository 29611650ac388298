// MatMul (numpy semantics, batch broadcasting) and joule's FusedMatMul through SGEMM (OpenBLAS or
// oneDNN). Batches whose B is the same matrix (a weight shared by every row of A) are merged into
// one tall GEMM. FusedMatMul's bias and residual are written into Y first (beta = 1), its
// activation is one pass afterwards.
#include "joule/kernels/algorithm.h"
#include "joule/kernels/gemm/matmul_epilogue.h"
#include "joule/kernels/gemm/sgemm.h"
#include "joule/ops/util.h"

namespace joule::kernels {
namespace {

struct MatMulPlan {
  Shape a, b, y;
  int64_t M = 0, N = 0, K = 0;
  std::vector<int64_t> a_off, b_off;  // per batch, in elements
  bool merged = false;                // one GEMM of [batches*M, K] x [K, N]
  MatMulEpilogue ep;                  // FusedMatMul's
};

std::string read(const NodeView& v, MatMulPlan* p) {
  if (!v.static_shape(0, &p->a) || !v.static_shape(1, &p->b) || !v.out_types[0] || !v.out_types[0]->is_static())
    return "shapes are not static";
  if (v.in_types[0]->dtype != DType::Float32 || v.in_types[1]->dtype != DType::Float32) return "not float32";
  if (p->a.empty() || p->b.empty()) return "scalar operand";
  p->y = v.out_types[0]->static_shape();
  Shape as = p->a, bs = p->b;
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  p->M = as[as.size() - 2];
  p->K = as.back();
  p->N = bs.back();
  if (bs[bs.size() - 2] != p->K) return "inner dimensions differ";
  const Shape abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
  const Shape batch = ops::broadcast_shapes({abatch, bbatch}, v.node);
  const int64_t nb = shape_numel(batch);
  ops::BroadcastIndexer ia(batch, abatch), ib(batch, bbatch);
  bool b_shared = true, a_contig = true;
  for (int64_t t = 0; t < nb; ++t) {
    p->a_off.push_back(ia.offset(t) * p->M * p->K);
    p->b_off.push_back(ib.offset(t) * p->K * p->N);
    b_shared = b_shared && p->b_off.back() == 0;
    a_contig = a_contig && p->a_off.back() == t * p->M * p->K;
  }
  p->merged = nb > 1 && b_shared && a_contig;
  if (std::string why = read_matmul_epilogue(v, p->y.empty() ? 1 : p->y.back(), &p->ep); !why.empty()) return why;
  if (p->ep.residual && v.in_types[3]->static_shape() != p->y) return "residual does not have the output's shape";
  if (p->ep.bias && p->b.size() == 1) return "a bias with a 1-D B";  // Y's last dim is then M, not N
  return "";
}

class BlasMatMul : public Kernel {
 public:
  BlasMatMul(Blas backend, MatMulPlan p) : b_(backend), p_(std::move(p)) {}
  void run(ops::KernelContext& k) const override {
    const Tensor& A = k.in(0);
    const Tensor& B = k.in(1);
    if (A.shape() != p_.a || B.shape() != p_.b || A.dtype() != DType::Float32 || B.dtype() != DType::Float32)
      fail(k.node.where() + ": inputs " + A.describe() + ", " + B.describe() + " differ from the plan");
    Tensor& Y = k.output(0, DType::Float32, p_.y);
    const float *a = A.data<float>(), *b = B.data<float>();
    float* y = Y.data<float>();
    const int64_t M = p_.M, N = p_.N, K = p_.K, nb = static_cast<int64_t>(p_.a_off.size());
    const bool pre = p_.ep.bias || p_.ep.residual;
    if (pre)
      matmul_prefill(y, p_.ep.bias ? k.in(2).data<float>() : nullptr, p_.ep.residual ? k.in(3).data<float>() : nullptr,
                     nb * M, N);
    const float beta = pre ? 1.f : 0.f;
    if (p_.merged || nb == 1) {
      parallel_sgemm(b_, *k.pool, false, false, M * (p_.merged ? nb : 1), N, K, 1.f, a + p_.a_off[0], K,
                     b + p_.b_off[0], N, beta, y, N);
    } else if (b_ == Blas::kOnednn) {  // oneDNN's team per product
      for (int64_t t = 0; t < nb; ++t)
        sgemm(b_, k.pool->threads(), false, false, M, N, K, 1.f, a + p_.a_off[static_cast<size_t>(t)], K,
              b + p_.b_off[static_cast<size_t>(t)], N, beta, y + t * M * N, N);
    } else {
      k.pool->parallel_for(nb, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t)
          sgemm(b_, 1, false, false, M, N, K, 1.f, a + p_.a_off[static_cast<size_t>(t)], K,
                b + p_.b_off[static_cast<size_t>(t)], N, beta, y + t * M * N, N);
      });
    }
    matmul_activate(p_.ep, y, nb * M * N, *k.pool);
  }

 private:
  Blas b_;
  MatMulPlan p_;
};

std::string supports(const NodeView& v) {
  MatMulPlan p;
  return read(v, &p);
}

template <Blas B>
double estimate_ms(const NodeView& v) {
  MatMulPlan p;
  read(v, &p);
  const double outputs = static_cast<double>(p.a_off.size()) * p.M * p.N;
  const int64_t rows = p.merged ? static_cast<int64_t>(p.a_off.size()) * p.M : p.M;  // of one SGEMM call
  const double b_bytes = p.merged ? 4.0 * static_cast<double>(p.K) * p.N : 0.0;  // one B for the whole call
  return sgemm_estimate_ms(B, 2.0 * outputs * p.K, v.threads, b_bytes, rows, p.N) + matmul_epilogue_ms(p.ep, outputs, v.threads);
}

template <Blas B>
std::unique_ptr<Kernel> prepare(const NodeView& v) {
  MatMulPlan p;
  read(v, &p);
  return std::make_unique<BlasMatMul>(B, std::move(p));
}

}  // namespace

extern const Algorithm kMatMulBlas;
const Algorithm kMatMulBlas{"matmul", "blas", "OpenBLAS SGEMM on the engine's pool (batched)", supports,
                            estimate_ms<Blas::kOpenBlas>, prepare<Blas::kOpenBlas>};
extern const Algorithm kMatMulOnednn;
const Algorithm kMatMulOnednn{"matmul", "onednn", "oneDNN sgemm (AVX-512 JIT), batched", supports,
                              estimate_ms<Blas::kOnednn>, prepare<Blas::kOnednn>};

}  // namespace joule::kernels
