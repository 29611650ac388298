// Gemm through SGEMM (OpenBLAS or oneDNN): Y = alpha * A' B' + beta * C with C broadcast into Y first.
#include "joule/kernels/algorithm.h"
#include "joule/kernels/gemm/sgemm.h"

namespace joule::kernels {
namespace {

struct GemmDims {
  bool ta = false, tb = false;
  int64_t M = 0, N = 0, K = 0;
  Shape a, b, c;  // c empty: no C
  float alpha = 1, beta = 1;
};

// A's shape may be unknown until run time (a detector's boxes, a dynamic batch): M = -1, and
// K is B's (checked at run time); B's shape is fixed at plan time.
std::string read(const NodeView& v, GemmDims* d) {
  if (!v.static_shape(1, &d->b)) return "shapes are not static";
  if (!v.static_shape(0, &d->a)) {
    const ir::TensorType* t = v.in_types[0];
    if (v.node.attr_int("transA", 0) != 0 || !t->has_shape || t->dims.size() != 2 || d->b.size() != 2)
      return "shapes are not static";
    d->a = {-1, v.node.attr_int("transB", 0) != 0 ? d->b[1] : d->b[0]};
  }
  if (v.in_types[0]->dtype != DType::Float32 || v.in_types[1]->dtype != DType::Float32) return "not float32";
  if (d->a.size() != 2 || d->b.size() != 2) return "A and B must be 2-D";
  d->ta = v.node.attr_int("transA", 0) != 0;
  d->tb = v.node.attr_int("transB", 0) != 0;
  d->M = d->ta ? d->a[1] : d->a[0];
  d->K = d->ta ? d->a[0] : d->a[1];
  d->N = d->tb ? d->b[0] : d->b[1];
  if ((d->tb ? d->b[1] : d->b[0]) != d->K) return "inner dimensions differ";
  d->alpha = v.node.attr_float("alpha", 1.f);
  d->beta = v.node.attr_float("beta", 1.f);
  if (v.has(2)) {
    if (!v.static_shape(2, &d->c)) return "C shape is not static";
    if (v.in_types[2]->dtype != DType::Float32) return "C is not float32";
    if (d->c.size() > 2) return "C has rank > 2";
    for (size_t i = 0; i < d->c.size(); ++i) {
      const int64_t want = (d->c.size() - i == 1) ? d->N : d->M;
      if (d->c[i] != 1 && d->c[i] != want) return "C cannot be broadcast";
    }
  }
  return "";
}

class BlasGemm : public Kernel {
 public:
  BlasGemm(Blas backend, GemmDims d) : b_(backend), d_(std::move(d)) {}
  void run(ops::KernelContext& k) const override {
    const Tensor& A = k.in(0);
    const Tensor& B = k.in(1);
    const int64_t M = d_.M >= 0 ? d_.M : (A.rank() == 2 ? A.dim(0) : -1);
    const bool a_ok = d_.M >= 0 ? A.shape() == d_.a : A.rank() == 2 && A.dim(1) == d_.a[1];
    if (!a_ok || B.shape() != d_.b || A.dtype() != DType::Float32 || B.dtype() != DType::Float32)
      fail(k.node.where() + ": inputs " + A.describe() + ", " + B.describe() + " differ from the plan");
    Tensor& Y = k.output(0, DType::Float32, {M, d_.N});
    float* y = Y.data<float>();
    float beta = 0.f;
    if (k.has(2) && d_.beta != 0.f) {
      const Tensor& C = k.in(2);
      if (C.shape() != d_.c) fail(k.node.where() + ": C " + C.describe() + " differs from the plan");
      const float* c = C.data<float>();
      const int64_t rs = d_.c.size() == 2 && d_.c[0] != 1 ? d_.c[1] : 0;  // broadcast strides
      const int64_t cs = !d_.c.empty() && d_.c.back() != 1 ? 1 : 0;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < d_.N; ++j) y[i * d_.N + j] = d_.beta * c[i * rs + j * cs];
      beta = 1.f;
    }
    if (M == 0) return;
    parallel_sgemm(b_, *k.pool, d_.ta, d_.tb, M, d_.N, d_.K, d_.alpha, A.data<float>(), A.dim(1), B.data<float>(),
                   B.dim(1), beta, y, d_.N);
  }

 private:
  Blas b_;
  GemmDims d_;
};

std::string supports(const NodeView& v) {
  GemmDims d;
  return read(v, &d);
}

template <Blas B>
double estimate_ms(const NodeView& v) {
  GemmDims d;
  read(v, &d);
  const double rows = d.M >= 0 ? static_cast<double>(d.M) : 64.0;  // unknown until run time: a nominal 64
  return sgemm_estimate_ms(B, 2.0 * rows * d.N * d.K, v.threads, 4.0 * d.N * d.K, d.M, d.N);
}

template <Blas B>
std::unique_ptr<Kernel> prepare(const NodeView& v) {
  GemmDims d;
  read(v, &d);
  return std::make_unique<BlasGemm>(B, std::move(d));
}

}  // namespace

extern const Algorithm kGemmBlas;
const Algorithm kGemmBlas{"gemm", "blas", "OpenBLAS SGEMM on the engine's pool", supports, estimate_ms<Blas::kOpenBlas>,
                          prepare<Blas::kOpenBlas>};
extern const Algorithm kGemmOnednn;
const Algorithm kGemmOnednn{"gemm", "onednn", "oneDNN sgemm (AVX-512 JIT)", supports, estimate_ms<Blas::kOnednn>,
                            prepare<Blas::kOnednn>};

}  // namespace joule::kernels
