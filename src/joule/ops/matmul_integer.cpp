// MatMulInteger and QLinearMatMul (ONNX opset 10), numpy matmul semantics on uint8/int8 codes.
// MatMulInteger: y = (a - a_zero_point) x (b - b_zero_point) in int32; QLinearMatMul:
// y = saturate(round_half_even(acc * a_scale * b_scale / y_scale) + y_zero_point). A's
// parameters may have one value per row (M), B's one per column (N). Exact accumulation
// (ops/int_util.h).
#include "joule/ops/int_util.h"

namespace joule::ops {
namespace {

int64_t rows(const Tensor& a) { return a.rank() >= 2 ? a.dim(-2) : 1; }
int64_t cols(const Tensor& b) { return b.rank() >= 2 ? b.dim(-1) : 1; }

void infer_matmul_integer(InferContext& c) { qint::infer_as(c, "MatMul", 0, 1, DType::Int32); }

void run_matmul_integer(KernelContext& c) {
  const Tensor& A = c.in(0);
  const Tensor& B = c.in(1);
  const Tensor a = qint::centered(c, A, qint::param(c, 2, rows(A), 0, "a_zero_point"), -2, "A");
  const Tensor b = qint::centered(c, B, qint::param(c, 3, cols(B), 0, "b_zero_point"), -1, "B");
  c.outputs[0] = qint::reference_acc(c, "MatMul", a, b).cast(DType::Int32);
}

Cost cost_matmul_integer(const CostContext& c) { return qint::matmul_cost(c, 0); }

void infer_qlinear_matmul(InferContext& c) { qint::infer_as(c, "MatMul", 0, 3, c.in(7).dtype); }

void run_qlinear_matmul(KernelContext& c) {
  const Tensor& A = c.in(0);
  const Tensor& B = c.in(3);
  const int64_t M = rows(A), N = cols(B);
  const Tensor a = qint::centered(c, A, qint::param(c, 2, M, 0, "a_zero_point"), -2, "A");
  const Tensor b = qint::centered(c, B, qint::param(c, 5, N, 0, "b_zero_point"), -1, "B");
  const Tensor acc = qint::reference_acc(c, "MatMul", a, b);
  const std::vector<double> as = qint::param(c, 1, M, 1, "a_scale"), bs = qint::param(c, 4, N, 1, "b_scale");
  const float ys = static_cast<float>(qint::param(c, 6, 1, 1, "y_scale")[0]);
  const float yzp = static_cast<float>(qint::param(c, 7, 1, 0, "y_zero_point")[0]);
  const double* pa = acc.data<double>();
  c.outputs[0] = qint::to_codes(c.in(7).dtype(), acc.shape(), yzp, [&](int64_t i) {
    const float sa = static_cast<float>(as[as.size() > 1 ? static_cast<size_t>((i / N) % M) : 0]);
    const float sb = static_cast<float>(bs[bs.size() > 1 ? static_cast<size_t>(i % N) : 0]);
    return static_cast<float>(pa[i]) * (sa * sb / ys);
  });
}

Cost cost_qlinear_matmul(const CostContext& c) { return qint::matmul_cost(c, 0); }

}  // namespace

extern const OpDef kOpMatMulInteger;
const OpDef kOpMatMulInteger{"MatMulInteger", "", 2, 4, infer_matmul_integer, run_matmul_integer, cost_matmul_integer};
extern const OpDef kOpQLinearMatMul;
const OpDef kOpQLinearMatMul{"QLinearMatMul", "", 8, 8, infer_qlinear_matmul, run_qlinear_matmul, cost_qlinear_matmul};

}  // namespace joule::ops
