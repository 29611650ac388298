// MatMul (numpy semantics, batch broadcasting) and joule's FusedMatMul through SGEMM (OpenBLAS or
// oneDNN). Batches whose B is the same matrix (a weight shared by every row of A) are merged into
// one tall GEMM. FusedMatMul's bias and residual are written into Y first (beta = 1), its
// activation is one pass afterwards. Algorithm onednn_bf16_rt (on request: --precision bf16) is
// oneDNN's matmul primitive on both operands converted to bfloat16 at every run (attention's
// Q.K^T and weights.V, whose B is computed), float32 sums and output.
#include <dnnl.hpp>

#include "joule/core/cpu_features.h"
#include "joule/kernels/algorithm.h"
#include "joule/kernels/conv/onednn.h"
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

// Fails when the run's A and B are not the planned float32 shapes.
void check_inputs(const MatMulPlan& p, const ops::KernelContext& k) {
  const Tensor& A = k.in(0);
  const Tensor& B = k.in(1);
  if (A.shape() != p.a || B.shape() != p.b || A.dtype() != DType::Float32 || B.dtype() != DType::Float32)
    fail(k.node.where() + ": inputs " + A.describe() + ", " + B.describe() + " differ from the plan");
}

class BlasMatMul : public Kernel {
 public:
  BlasMatMul(Blas backend, MatMulPlan p) : b_(backend), p_(std::move(p)) {}
  void run(ops::KernelContext& k) const override {
    const Tensor& A = k.in(0);
    const Tensor& B = k.in(1);
    check_inputs(p_, k);
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

// ---- onednn_bf16_rt: both operands in bfloat16, converted at every run
using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

// One product, or a batch whose operands follow each other in memory (no broadcast).
bool regular_batches(const MatMulPlan& p) {
  const int64_t nb = static_cast<int64_t>(p.a_off.size());
  if (p.merged || nb == 1) return true;
  for (int64_t t = 0; t < nb; ++t)
    if (p.a_off[static_cast<size_t>(t)] != t * p.M * p.K || p.b_off[static_cast<size_t>(t)] != t * p.K * p.N) return false;
  return true;
}

// The operands' dims: one product ([rows, K] x [K, N]) or a batch of them.
struct Bf16Dims {
  memory::dims a, b, y;
  tag t = tag::ab;
};
Bf16Dims bf16_dims(const MatMulPlan& p) {
  const int64_t nb = static_cast<int64_t>(p.a_off.size());
  if (p.merged || nb == 1) {
    const int64_t rows = p.M * (p.merged ? nb : 1);
    return {{rows, p.K}, {p.K, p.N}, {rows, p.N}, tag::ab};
  }
  return {{nb, p.M, p.K}, {nb, p.K, p.N}, {nb, p.M, p.N}, tag::abc};
}
// oneDNN's matmul on bf16 A and B with a float32 Y (plus the sum post-op when Y is prefilled);
// throws dnnl::error when oneDNN has none for it.
dnnl::matmul::primitive_desc bf16_primitive_desc(const MatMulPlan& p) {
  const Bf16Dims d = bf16_dims(p);
  dnnl::primitive_attr attr;
  if (p.ep.bias || p.ep.residual) {  // prefilled into Y: the sum post-op adds the product
    dnnl::post_ops po;
    po.append_sum(1.f);
    attr.set_post_ops(po);
  }
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(memory::desc(d.a, dt::bf16, d.t), memory::desc(d.b, dt::bf16, d.t),
                                                         memory::desc(d.y, dt::f32, d.t)),
                                      attr, onednn_engine());
}

class Bf16MatMul : public Kernel {
 public:
  Bf16MatMul(MatMulPlan p, int threads) : p_(std::move(p)), stream_(onednn_engine()) {
    onednn_set_threads(threads);
    const auto& eng = onednn_engine();
    const Bf16Dims d = bf16_dims(p_);
    a32_ = memory({d.a, dt::f32, d.t}, eng, DNNL_MEMORY_NONE);
    b32_ = memory({d.b, dt::f32, d.t}, eng, DNNL_MEMORY_NONE);
    a16_ = memory({d.a, dt::bf16, d.t}, eng);
    b16_ = memory({d.b, dt::bf16, d.t}, eng);
    y_ = memory({d.y, dt::f32, d.t}, eng, DNNL_MEMORY_NONE);
    pd_ = bf16_primitive_desc(p_);
    prim_ = dnnl::matmul(pd_);
    convert_a_ = dnnl::reorder(a32_, a16_);
    convert_b_ = dnnl::reorder(b32_, b16_);
    args_ = {{DNNL_ARG_SRC, a16_}, {DNNL_ARG_WEIGHTS, b16_}, {DNNL_ARG_DST, y_},
             {DNNL_ARG_SCRATCHPAD, memory(pd_.scratchpad_desc(), eng)}};
  }

  void run(ops::KernelContext& k) const override {
    const Tensor& A = k.in(0);
    const Tensor& B = k.in(1);
    check_inputs(p_, k);
    Tensor& Y = k.output(0, DType::Float32, p_.y);
    const int64_t nb = static_cast<int64_t>(p_.a_off.size());
    if (p_.ep.bias || p_.ep.residual)
      matmul_prefill(Y.data<float>(), p_.ep.bias ? k.in(2).data<float>() : nullptr,
                     p_.ep.residual ? k.in(3).data<float>() : nullptr, nb * p_.M, p_.N);
    onednn_set_threads(k.pool->threads());
    a32_.set_data_handle(const_cast<float*>(A.data<float>()));
    b32_.set_data_handle(const_cast<float*>(B.data<float>()));
    y_.set_data_handle(Y.data<float>());
    convert_a_.execute(stream_, a32_, a16_);
    convert_b_.execute(stream_, b32_, b16_);
    prim_.execute(stream_, args_);
    stream_.wait();
    matmul_activate(p_.ep, Y.data<float>(), nb * p_.M * p_.N, *k.pool);
  }

  std::string detail() const override { return pd_.impl_info_str(); }

 private:
  MatMulPlan p_;
  mutable dnnl::stream stream_;
  mutable memory a32_, b32_, a16_, b16_, y_;
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul prim_;
  dnnl::reorder convert_a_, convert_b_;
  std::unordered_map<int, memory> args_;
};

std::string bf16_supports(const NodeView& v) {
  if (std::string r = bf16_unsupported_reason(); !r.empty()) return r;
  MatMulPlan p;
  if (std::string r = read(v, &p); !r.empty()) return r;
  if (!regular_batches(p)) return "batches broadcast one operand";
  try {  // the primitive's descriptor as the kernel makes it (no JIT code yet)
    bf16_primitive_desc(p);
    return "";
  } catch (const dnnl::error& e) {
    return std::string("oneDNN has no bf16 matmul for it: ") + e.what();
  }
}

// The products at the bf16 rate (AMX: 4x sgemm's, as the packed bf16 matmul; AVX512-BF16: 2x),
// plus the conversion of both operands (4 bytes read, 2 written per element) at every run.
double bf16_estimate_ms(const NodeView& v) {
  MatMulPlan p;
  read(v, &p);
  const double nb = static_cast<double>(p.a_off.size());
  const double outputs = nb * p.M * p.N, speedup = cpu_features().amx_bf16 ? 4.0 : 2.0;
  const int64_t rows = p.merged ? static_cast<int64_t>(nb) * p.M : p.M;
  const double converted = nb * p.M * p.K + (p.merged ? 1.0 : nb) * p.K * p.N;
  return sgemm_estimate_ms(Blas::kOnednn, 2.0 * outputs * p.K / speedup, v.threads, 0.0, rows, p.N) +
         6.0 * converted / (20e9 * v.threads) * 1e3 + matmul_epilogue_ms(p.ep, outputs, v.threads);
}

std::unique_ptr<Kernel> bf16_prepare(const NodeView& v) {
  MatMulPlan p;
  read(v, &p);
  return make_onednn_kernel<Bf16MatMul>(v.node.where() + ": ", "bf16 matmul", std::move(p), v.threads);
}

}  // namespace

extern const Algorithm kMatMulOnednnBf16Rt;
const Algorithm kMatMulOnednnBf16Rt{"matmul", "onednn_bf16_rt",
                                    "oneDNN matmul with both operands converted to bfloat16 at every run (float32 sums "
                                    "and output; --precision bf16)",
                                    bf16_supports, bf16_estimate_ms, bf16_prepare, /*on_request_only=*/true};

extern const Algorithm kMatMulBlas;
const Algorithm kMatMulBlas{"matmul", "blas", "OpenBLAS SGEMM on the engine's pool (batched)", supports,
                            estimate_ms<Blas::kOpenBlas>, prepare<Blas::kOpenBlas>};
extern const Algorithm kMatMulOnednn;
const Algorithm kMatMulOnednn{"matmul", "onednn", "oneDNN sgemm (AVX-512 JIT), batched", supports,
                              estimate_ms<Blas::kOnednn>, prepare<Blas::kOnednn>};

}  // namespace joule::kernels
