// The "gemm" algorithm of the conv_transpose op class: float32 ConvTranspose (1-D to 3-D,
// every attribute the op has) as one SGEMM per image and group, cols[M/g * K, L] = W_g^T
// X_g[C/g, L] (K: the kernel's volume, L: the input's spatial size), then col2im: each row of
// cols added into the output at i * stride + k * dilation - pad, over the bias. Images x groups
// over threads (one-thread SGEMMs) when there are enough of them, else each SGEMM on the whole
// pool and the col2im over output channels. The weights are packed once as W_g^T.
#include <algorithm>
#include <vector>

#include "joule/core/error.h"
#include "joule/kernels/algorithm.h"
#include "joule/kernels/eltwise/eltwise.h"
#include "joule/kernels/gemm/sgemm.h"
#include "joule/ops/conv_util.h"

namespace joule::kernels {
namespace {

class ConvTransposeGemm final : public Kernel {
 public:
  explicit ConvTransposeGemm(const NodeView& v) {
    const Tensor& W = *v.constant(1);
    c_ = W.dim(0);
    group_ = v.node.attr_int("group", 1);
    cg_ = c_ / group_;
    mg_ = W.dim(1);
    kvol_ = W.numel() / (c_ * mg_);
    // W_g is [C/g, M/g * K] row-major: packed transposed, [M/g * K, C/g] per group.
    wt_.resize(static_cast<size_t>(W.numel()));
    const float* w = W.data<float>();
    const int64_t rows = mg_ * kvol_;
    for (int64_t g = 0; g < group_; ++g)
      for (int64_t ic = 0; ic < cg_; ++ic)
        for (int64_t r = 0; r < rows; ++r)
          wt_[static_cast<size_t>((g * rows + r) * cg_ + ic)] = w[((g * cg_ + ic) * rows) + r];
  }

  bool reads_input(size_t i) const override { return i != 1; }

  void run(ops::KernelContext& k) const override {
    const ops::ConvTransposePlan plan = ops::plan_conv_transpose(k);
    const Tensor& X = k.in(0);
    if (X.dtype() != DType::Float32 || X.dim(1) != c_ || plan.group != group_)
      fail(k.node.where() + ": the gemm kernel was prepared for float32 with " + std::to_string(c_) + " channels, got " +
           X.describe());
    const Tensor* B = k.has(2) ? k.inputs[2] : nullptr;
    Tensor& Y = k.output(0, DType::Float32, plan.out);
    const ops::SpatialPlan& p = plan.p;
    const int64_t N = X.dim(0), M = mg_ * group_, L = p.in_size(), rows = mg_ * kvol_, items = N * group_;
    const float* x = X.data<float>();
    const float* bias = B ? B->data<float>() : nullptr;
    float* y = Y.data<float>();
    const int threads = k.pool ? k.pool->threads() : 1;
    auto gemm = [&](int64_t item, float* cols, int gemm_threads) {
      const int64_t n = item / group_, g = item % group_;
      sgemm(Blas::kOpenBlas, gemm_threads, false, false, rows, L, cg_, 1.f, wt_.data() + g * rows * cg_, cg_,
            x + (n * c_ + g * cg_) * L, L, 0.f, cols, L);
    };
    // Output channels [m0, m1) of item (n, g) from its cols.
    auto col2im = [&](int64_t item, const float* cols, int64_t m0, int64_t m1) {
      const int64_t n = item / group_, g = item % group_;
      for (int64_t om = m0; om < m1; ++om) {
        const int64_t m = g * mg_ + om;
        float* yp = y + (n * M + m) * p.out_size();
        std::fill(yp, yp + p.out_size(), bias ? bias[m] : 0.f);
        for (int64_t kd = 0; kd < p.k[0]; ++kd)
          for (int64_t kh = 0; kh < p.k[1]; ++kh)
            for (int64_t kw = 0; kw < p.k[2]; ++kw)
              ops::scatter_kernel_offset(p, kd, kh, kw, cols + (om * kvol_ + (kd * p.k[1] + kh) * p.k[2] + kw) * L, 1.f, yp);
      }
    };
    if (items >= threads || threads == 1) {
      split_items(k.pool, items, rows * L * cg_, [&](int64_t i0, int64_t i1) {
        std::vector<float> cols(static_cast<size_t>(rows * L));
        for (int64_t item = i0; item < i1; ++item) {
          gemm(item, cols.data(), 1);
          col2im(item, cols.data(), 0, mg_);
        }
      });
      return;
    }
    std::vector<float> cols(static_cast<size_t>(rows * L));
    for (int64_t item = 0; item < items; ++item) {
      gemm(item, cols.data(), threads);
      split_items(k.pool, mg_, kvol_ * L, [&](int64_t m0, int64_t m1) { col2im(item, cols.data(), m0, m1); });
    }
  }

 private:
  int64_t c_ = 0, group_ = 1, cg_ = 0, mg_ = 0, kvol_ = 1;
  std::vector<float> wt_;
};

std::string supports(const NodeView& v) {
  if (!v.node.domain.empty() || v.node.op_type != "ConvTranspose") return "not ConvTranspose";
  if (!v.has(0) || v.in_types[0]->dtype != DType::Float32) return "X is not float32";
  const Tensor* w = v.constant(1);
  if (!w || w->dtype() != DType::Float32 || w->rank() < 3 || w->rank() > 5) return "W is not a constant float32 of rank 3 to 5";
  const int64_t group = v.node.attr_int("group", 1);
  if (group <= 0 || w->dim(0) % group != 0) return "the weight's channels are not divisible by group";
  if (v.has(2) && !v.constant(2)) return "B is not a constant";
  Shape x;
  if (!v.static_shape(0, &x)) return "the input shape is known only at run time";
  return "";
}

// The SGEMM's flops at OpenBLAS's rate, plus one pass of col2im over the cols.
double estimate_ms(const NodeView& v) {
  const Tensor& w = *v.constant(1);
  const double x = static_cast<double>(planned_numel(v, 0));
  const double flops = 2.0 * x * static_cast<double>(w.numel() / w.dim(0));
  return sgemm_estimate_ms(Blas::kOpenBlas, flops, v.threads) + flops / 2 * 4 / (8e9 * std::max(1, v.threads)) * 1e3;
}

std::unique_ptr<Kernel> prepare(const NodeView& v) { return std::make_unique<ConvTransposeGemm>(v); }

}  // namespace

extern const Algorithm kConvTransposeGemm;
const Algorithm kConvTransposeGemm{"conv_transpose", "gemm",
                                   "float32 ConvTranspose as one SGEMM per image and group (W^T X), then col2im over the "
                                   "bias; images x groups over threads",
                                   supports, estimate_ms, prepare};

}  // namespace joule::kernels
