// FusedMatMul (domain "joule"): Y = act(MatMul(A, B) + bias + Z), made by the fuse_matmul pass
// from a MatMul followed by a bias Add, a residual Add and/or an activation, so that the GEMM
// applies them while its output is in registers (oneDNN post-ops) instead of three more passes
// over memory. Inputs: A, B (MatMul's), optional bias (N = Y's last dim values, shape [N] or
// [1, ..., 1, N]: added to every row), optional Z (Y's shape: the residual). Attributes
// `activation` ("", Relu, LeakyRelu, Clip, Gelu: the erf form) and `activation_params` as
// FusedConv's. Not ORT's com.microsoft FusedMatMul (alpha and transposes): a different op.
// The reference kernel runs MatMul's reference and then the epilogue.
#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

const OpDef& matmul_def() {
  static const OpDef* d = find_op("", "MatMul");
  return *d;
}

std::string check(const ir::Node& n, int64_t) { return nn::FusedActivation(n).check(true); }

// A bias of `s` for outputs whose last dim is `n`: N values, all leading dims 1.
bool bias_shape_ok(const Shape& s, int64_t n) {
  if (s.empty() || s.back() != n) return false;
  for (size_t i = 0; i + 1 < s.size(); ++i)
    if (s[i] != 1) return false;
  return true;
}

void infer(InferContext& c) {
  matmul_def().infer(c);
  const ir::TensorType& y = c.out(0);
  if (c.has(2)) {
    const ir::TensorType& b = c.in(2);
    if (b.is_static() && y.is_static() && !y.dims.empty() && !bias_shape_ok(b.static_shape(), y.dims.back().value))
      fail(c.node.where() + ": bias " + b.str() + " is not [N] (or [1, ..., N]) for the output " + y.str());
  }
  if (c.has(3)) {
    const ir::TensorType& z = c.in(3);
    if (z.is_static() && y.is_static() && z.static_shape() != y.static_shape())
      fail(c.node.where() + ": residual " + z.str() + " does not match the output " + y.str());
  }
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  nn::check_same_dtypes(c, 0, 4);
  KernelContext mm{c.node, c.opset, {c.inputs[0], c.inputs[1]}, {}, c.pool};
  mm.outputs.resize(1);
  matmul_def().run(mm);
  Tensor Y = mm.outputs[0];
  const int64_t n = Y.rank() ? Y.dim(Y.rank() - 1) : 1;
  const Tensor* bias = c.has(2) ? c.inputs[2] : nullptr;
  const Tensor* Z = c.has(3) ? c.inputs[3] : nullptr;
  if (bias && (Y.rank() == 0 || !bias_shape_ok(bias->shape(), n)))
    fail(c.node.where() + ": bias " + bias->describe() + " is not [N] for the output " + Y.describe());
  if (Z && Z->shape() != Y.shape())
    fail(c.node.where() + ": residual " + Z->describe() + " does not match the output " + Y.describe());
  const nn::FusedActivation act(c.node);
  visit_floating(Y.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* y = Y.data<T>();
    const T* b = bias ? bias->data<T>() : nullptr;
    const T* z = Z ? Z->data<T>() : nullptr;
    for (int64_t i = 0; i < Y.numel(); ++i) {
      T v = y[i];
      if (b) v += b[i % n];
      if (z) v += z[i];
      y[i] = act(v);
    }
  });
  c.outputs[0] = Y;
}

Cost cost(const CostContext& c) {
  Cost r = matmul_def().cost(c);
  const std::string act = nn::FusedActivation(c.node).kind;
  const double per = act.empty() ? 0 : act == "Gelu" ? 10 : 1;  // erf ~8 flops
  auto present = [&](size_t i) { return c.node.has_input(i) ? 1.0 : 0.0; };
  if (!c.out.empty()) r.flops += nn::numel_d(c.out[0]) * (present(2) + present(3) + per);
  return r;
}

}  // namespace

extern const OpDef kOpFusedMatMul;
const OpDef kOpFusedMatMul{"FusedMatMul", "joule", 2, 4, infer, run, cost, check};

}  // namespace joule::ops
