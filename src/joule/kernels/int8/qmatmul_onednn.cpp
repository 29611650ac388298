// Op class "qmatmul" (joule QMatMul), algorithm onednn_int8: oneDNN's int8 matmul on A's codes
// viewed as [rows, K] (row-major, no reorder) and the int8 weight [K, N] reordered once into the
// primitive's layout. Per-column output scales, bias, activation and output zero point fused as
// for QConv (kernels/int8/int8_node.h); the input zero point is a runtime attribute.
#include <dnnl.hpp>

#include "joule/core/cpu_features.h"
#include "joule/kernels/conv/onednn.h"
#include "joule/kernels/gemm/onednn_matmul.h"
#include "joule/kernels/int8/onednn_int8.h"

namespace joule::kernels {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;


class OnednnQMatMul : public Kernel {
 public:
  OnednnQMatMul(const QMatMulProblem& p, int threads)
      : p_(p),
        mm_(memory::desc({p.M, p.K}, onednn_code_type(p.q.x_type), tag::ab),
            memory({{p.K, p.N}, dt::s8, tag::ab}, onednn_engine(), const_cast<int8_t*>(p.q.w->data<int8_t>())),
            p.q.rq.bias_acc.empty() ? memory::desc() : memory::desc({1, p.N}, dt::f32, tag::ab),
            memory::desc({p.M, p.N}, onednn_code_type(p.q.y_type), tag::ab), onednn_int8_attr(p.q), threads) {
    onednn_bind_int8_args(p.q, mm_.pd().bias_desc(), mm_.args());
  }

  void run(ops::KernelContext& k) const override {
    check_int8_input(k, p_.q, p_.a_shape);
    const Tensor& A = k.in(0);
    Tensor& Y = k.output(0, p_.q.y_type, p_.y_shape);
    mm_.execute(A.raw(), Y.raw(), k.pool->threads());
  }

  std::string detail() const override { return mm_.detail(); }

 private:
  QMatMulProblem p_;
  OnednnMatMulPrimitive mm_;
};

std::string supports(const NodeView& v) {
  QMatMulProblem p;
  if (std::string r = read_qmatmul_problem(v, &p); !r.empty()) return r;
  return onednn_int8_inexact_reason(p.q);
}

double estimate_ms(const NodeView& v) {
  QMatMulProblem p;
  read_qmatmul_problem(v, &p);
  // Without VNNI oneDNN runs its gemm:jit, which packs the weights again on every call (~1.1 GB/s
  // of codes: MobileNetV3's 1024 x 1000 classifier at batch 1 took 0.9-1.0 ms).
  const bool vnni = cpu_features().int8_dot;
  const double repack_ms = vnni ? 0 : static_cast<double>(p.K) * p.N / 1.1e9 * 1e3;
  const double rate = vnni ? 400e9 : 165e9;
  return 2.0 * static_cast<double>(p.M) * p.N * p.K / (rate * v.threads) * 1e3 + repack_ms + 0.003;
}

std::unique_ptr<Kernel> prepare(const NodeView& v) {
  QMatMulProblem p;
  if (std::string r = read_qmatmul_problem(v, &p); !r.empty()) fail_internal(v.node.where() + ": " + r);
  return make_onednn_kernel<OnednnQMatMul>(v.node.where() + ": ", "int8 matmul", p, v.threads);
}

}  // namespace

extern const Algorithm kQMatMulOnednnInt8;
const Algorithm kQMatMulOnednnInt8{"qmatmul", "onednn_int8",
                                   "oneDNN int8 matmul (VNNI/AMX JIT, or AVX2 for uint8 inputs and 7-bit weights; fused "
                                   "scales and post-ops)",
                                   supports, estimate_ms, prepare};

}  // namespace joule::kernels
