// QMatMul (domain "joule"): integer matrix product A x B with a float or requantized output and
// a fused epilogue, made by the lower_int8 pass from QDQ MatMul/Gemm patterns. Inputs: 0 A codes
// [..., K] (uint8/int8), 1 x_scale, 2 x_zero_point (per tensor), 3 B codes [K, N] (int8),
// 4 w_scale (scalar or per column), 5 w_zero_point (same), 6 bias (float32 [N], optional),
// 7 y_scale, 8 y_zero_point (optional). Attributes `activation` / `activation_params` as QConv.
//   real = sum_k (a - x_zp)(b - w_zp[n]) * x_scale * w_scale[n] + bias[n];  real = act(real)
//   y = real (float32), or saturate(round_half_even(real / y_scale) + y_zp) in y_zp's type.
#include "joule/ops/int_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  const ir::TensorType& b = c.in(3);
  if (b.has_shape && b.dims.size() != 2) fail(c.node.where() + ": B must be 2-D [K, N], got " + b.str());
  qint::infer_as(c, "MatMul", 0, 3, qint::q_output_type(c));
}

void run(KernelContext& c) {
  const Tensor& B = c.in(3);
  JOULE_CHECK(B.rank() == 2, c.node.where() + ": B must be 2-D [K, N], got " + B.describe());
  const int64_t N = B.dim(1);
  const Tensor a = qint::centered(c, c.in(0), qint::param(c, 2, 1, 0, "x_zero_point"), 0, "A");
  const Tensor b = qint::centered(c, B, qint::param(c, 5, N, 0, "w_zero_point"), 1, "B");
  const Tensor acc = qint::reference_acc(c, "MatMul", a, b);
  qint::q_epilogue(c, acc, N, 1);
}

Cost cost(const CostContext& c) { return qint::matmul_cost(c, 0); }

std::string check(const ir::Node& n, int64_t) { return qint::Activation(n).check(); }

}  // namespace

extern const OpDef kOpQMatMul;
const OpDef kOpQMatMul{"QMatMul", "joule", 5, 9, infer, run, cost, check};

}  // namespace joule::ops
