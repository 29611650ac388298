// Op classes "matmul" (MatMul, joule FusedMatMul) and "gemm" (Gemm), algorithm onednn_packed:
// oneDNN's matmul primitive with the constant B reordered once, in prepare(), into the layout
// the primitive picks (format `any`: blocked for its brgemm kernels), where dnnl_sgemm packs B
// again on every call. A's leading dims are merged into M (B is one 2-D matrix). The bias
// (FusedMatMul's, or Gemm's beta * C when C is a row), the residual (sum post-op: Z is copied
// into Y first) and the activation (eltwise post-op, GELU included) are applied in registers.
// Gemm needs transA = 0; alpha is folded into the packed weights.
// Algorithm onednn_bf16 (on request: --precision bf16) is the same primitive multiplying in
// bfloat16: B converted once, A at every run, sums, bias, post-ops and Y in float32.
#include <algorithm>
#include <cstring>
#include <dnnl.hpp>

#include "joule/core/cpu_features.h"
#include "joule/kernels/algorithm.h"
#include "joule/kernels/conv/onednn.h"
#include "joule/kernels/gemm/matmul_epilogue.h"
#include "joule/kernels/gemm/onednn_matmul.h"
#include "joule/kernels/gemm/packed_problem.h"
#include "joule/kernels/gemm/sgemm.h"

namespace joule::kernels {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// The post-ops of a FusedMatMul's epilogue: act(acc + bias + dst) with the residual in dst.
dnnl::primitive_attr epilogue_attr(const MatMulEpilogue& ep) {
  dnnl::post_ops po;
  if (ep.residual) po.append_sum(1.f);
  switch (ep.act) {
    case MatMulAct::kNone: break;
    case MatMulAct::kRelu: break;  // after the primitive (keeps NaN; see kernels/conv/onednn.h)
    case MatMulAct::kLeakyRelu: po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, ep.alpha, 0.f); break;
    case MatMulAct::kClip: break;  // after the primitive
    case MatMulAct::kGelu: po.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f); break;
    case MatMulAct::kSigmoid:
    case MatMulAct::kSilu: fail_internal("FusedMatMul has no Sigmoid or SiLU epilogue");
  }
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  return attr;
}

// B (times alpha) as oneDNN user memory; [N, K] row-major is [K, N] in `ba`. `scaled` keeps
// the scaled copy alive until the primitive has reordered it.
memory user_weights(const PackedProblem& p, std::vector<float>* scaled) {
  const float* w = p.w->data<float>();
  if (p.alpha != 1.f) {
    scaled->assign(w, w + p.w->numel());
    for (float& x : *scaled) x *= p.alpha;
    w = scaled->data();
  }
  return memory({{p.K, p.N}, dt::f32, p.tb ? tag::ba : tag::ab}, onednn_engine(), const_cast<float*>(w));
}

class PackedMatMul : public Kernel {
 public:
  PackedMatMul(const PackedProblem& p, int threads, bool bf16)
      : a_(p.a), y_(p.y), residual_(p.ep.residual), after_(p.ep),
        mm_(memory::desc({p.M, p.K}, dt::f32, tag::ab), user_weights(p, &scaled_),
            p.bias.empty() ? memory::desc() : memory::desc({1, p.N}, dt::f32, tag::ab),
            memory::desc({p.M, p.N}, dt::f32, tag::ab), epilogue_attr(p.ep), threads,
            bf16 ? dt::bf16 : dt::undef) {
    scaled_ = {};  // packed now
    if (!p.bias.empty()) {
      memory bias(mm_.pd().bias_desc(), onednn_engine());
      std::memcpy(bias.get_data_handle(), p.bias.data(), sizeof(float) * p.bias.size());
      mm_.args()[DNNL_ARG_BIAS] = bias;
    }
  }

  void run(ops::KernelContext& k) const override {
    const Tensor& A = k.in(0);
    if (A.dtype() != DType::Float32 || A.shape() != a_)
      fail(k.node.where() + ": input " + A.describe() + " differs from the planned float32" + shape_str(a_));
    Tensor& Y = k.output(0, DType::Float32, y_);
    if (residual_) {  // the sum post-op adds what Y holds
      const Tensor& Z = k.in(3);
      if (Z.dtype() != DType::Float32 || Z.shape() != y_)
        fail(k.node.where() + ": residual " + Z.describe() + " differs from the planned output " + shape_str(y_));
      if (Z.raw() != Y.raw()) std::memcpy(Y.raw(), Z.raw(), Y.nbytes());
    }
    mm_.execute(A.raw(), Y.raw(), k.pool->threads());
    if (after_.act == MatMulAct::kRelu || after_.act == MatMulAct::kClip) matmul_activate(after_, Y.data<float>(), Y.numel(), *k.pool);
  }

  std::string detail() const override { return mm_.detail(); }
  // B is reordered into the primitive's memory and the bias copied: only A and the residual.
  bool reads_input(size_t i) const override { return i == 0 || i == 3; }

 private:
  Shape a_, y_;
  bool residual_;
  MatMulEpilogue after_;  // ReLU and Clip: applied after the primitive
  std::vector<float> scaled_;  // alpha * B until the primitive has packed it
  OnednnMatMulPrimitive mm_;
};

template <std::string (*Read)(const NodeView&, PackedProblem*)>
std::string supports(const NodeView& v) {
  PackedProblem p;
  return Read(v, &p);
}

// 1 thread, bench/kernels_bench matmul/* (BENCHMARKS.md): 190-200 GFLOP/s on ViT shapes, the
// same as dnnl_sgemm on plain products and 10 % above it on [197x768]x[768x3072]; the gain is
// the fused epilogue, which the SGEMM kernels pay as extra passes (matmul_epilogue_ms).
// A matrix-vector product (M <= 2) only streams B, and the primitive streams packed B slower
// than oneDNN's sgemm streams plain B (1 thread, `joule bench` of one Gemm, min of 20 runs:
// 3.4 vs 2.8 ms on 4096x4096, 5.7 vs 3.6 ms on 25088x1024, 0.11 vs 0.12 ms on 768x3072; from M = 4
// on packing wins, 3.1 vs 5.1 ms on 4096x4096), while its packed copy doubles B's memory. The
// extra term, B's bytes at 50 GB/s, leaves those products to sgemm.
// Both stream B at least once (~25 GB/s at 1 thread, as sgemm_estimate_ms). `bytes`: of one
// element of the packed B (4, or 2 in bfloat16, whose products also run at twice the rate).
// Without AVX-512 the primitive's AVX2 kernels run at about dnnl_sgemm's rates (sgemm.cpp's
// note), the wide products of few rows included; but with 3 to 16 rows they read packed B at
// only ~3 GB/s (AMD Zen 3, 1 thread, AlexNet's fully connected layers at batch 8: 53, 20 and
// 4.5 ms for 151, 67 and 16 MB of B).
double packed_estimate_ms(const PackedProblem& p, int threads, double bytes, double speedup) {
  const double b_bytes = bytes * static_cast<double>(p.K) * p.N;
  const double stream_penalty = p.M <= 2 ? b_bytes / 50e9 * 1e3 : 0.0;
  const double rate = cpu_features().avx512 ? 120e9 : sgemm_gflops(Blas::kOnednn, p.M, p.N) * 1e9;
  const double compute = 2.0 * static_cast<double>(p.M) * p.N * p.K / (rate * speedup * threads);
  const double stream_rate = !cpu_features().avx512 && p.M > 2 && p.M <= 16 ? 3e9 : 25e9;
  return std::max(compute, b_bytes / (stream_rate * threads)) * 1e3 + 0.002 + stream_penalty;
}

template <std::string (*Read)(const NodeView&, PackedProblem*)>
double estimate_ms(const NodeView& v) {
  PackedProblem p;
  Read(v, &p);
  return packed_estimate_ms(p, v.threads, 4.0, 1.0);
}

template <std::string (*Read)(const NodeView&, PackedProblem*)>
std::string bf16_supports(const NodeView& v) {
  if (std::string r = bf16_unsupported_reason(); !r.empty()) return r;
  return supports<Read>(v);
}

// Measured side by side with the float32 primitive (1 thread, Zen 4 AVX512-BF16): 0.50-0.51x
// its time on BERT/ViT projections (M 128-197, K 768, N 768-3072), the conversion of A (4 bytes
// read, 2 written per element) included; a matrix-vector product streams half the bytes of B
// (vgg16's 25088x4096 Gemm: 16.4 ms against 21.6 for sgemm). With AMX tiles (Intel, AMX-BF16,
// 2026-11-29): 3.4x the float32 rate on the same projections (BERT 444 against 130 GFLOP/s,
// ViT-B/16 460 against 134, the conversion included): the products at 4x, the conversion apart.
template <std::string (*Read)(const NodeView&, PackedProblem*)>
double bf16_estimate_ms(const NodeView& v) {
  PackedProblem p;
  Read(v, &p);
  return packed_estimate_ms(p, v.threads, 2.0, cpu_features().amx_bf16 ? 4.0 : 2.0) + 6.0 * static_cast<double>(p.M) * p.K / (20e9 * v.threads) * 1e3;
}

template <std::string (*Read)(const NodeView&, PackedProblem*), bool Bf16 = false>
std::unique_ptr<Kernel> prepare(const NodeView& v) {
  PackedProblem p;
  if (std::string why = Read(v, &p); !why.empty()) fail_internal(v.node.where() + ": " + why);
  return make_onednn_kernel<PackedMatMul>(v.node.where() + ": ", "matmul", p, v.threads, Bf16);
}

}  // namespace

extern const Algorithm kMatMulOnednnPacked;
const Algorithm kMatMulOnednnPacked{
    "matmul", "onednn_packed", "oneDNN matmul primitive, constant B packed once, bias/residual/activation as post-ops",
    supports<read_matmul>, estimate_ms<read_matmul>, prepare<read_matmul>};
extern const Algorithm kGemmOnednnPacked;
const Algorithm kGemmOnednnPacked{"gemm", "onednn_packed",
                                  "oneDNN matmul primitive, constant B packed once (transA = 0), bias as a post-op",
                                  supports<read_gemm>, estimate_ms<read_gemm>, prepare<read_gemm>};
extern const Algorithm kMatMulOnednnBf16;
const Algorithm kMatMulOnednnBf16{"matmul", "onednn_bf16",
                                  "oneDNN matmul primitive in bfloat16, constant B packed once (float32 sums and "
                                  "output; --precision bf16)",
                                  bf16_supports<read_matmul>, bf16_estimate_ms<read_matmul>,
                                  prepare<read_matmul, true>, /*on_request_only=*/true};
extern const Algorithm kGemmOnednnBf16;
const Algorithm kGemmOnednnBf16{"gemm", "onednn_bf16",
                                "oneDNN matmul primitive in bfloat16, constant B packed once (float32 sums and "
                                "output; --precision bf16)",
                                bf16_supports<read_gemm>, bf16_estimate_ms<read_gemm>, prepare<read_gemm, true>,
                                /*on_request_only=*/true};

}  // namespace joule::kernels
