// MatMul epilogue fusion: MatMul [-> Add(bias)] [-> Add(residual)] [-> Relu | LeakyRelu | Clip |
// Gelu] becomes one joule FusedMatMul, which the oneDNN matmul kernel runs as one primitive with
// post-ops (a transformer's projections and MLP: no separate passes for the bias, the residual
// and the GELU). The bias is a constant with N = the output's last dim values (shape [N] or
// [1, ..., 1, N]); the residual and the activation follow fuse_conv's rules (epilogue_fuser.h).
// Arithmetic is unchanged: act(A B + bias + z).
#include "joule/passes/epilogue_fuser.h"
#include "joule/passes/infer_shapes.h"
#include "joule/passes/pass.h"

namespace joule::passes {

namespace {

// The bias Add after MatMul `n` (a constant [.., N] with leading ones) as its input 2.
bool try_bias(ir::Graph& g, EpilogueFuser& f, ir::Node& n) {
  ir::Node* add = f.only_consumer(n.outputs[0]);
  if (!add || !add->domain.empty() || add->op_type != "Add" || add->inputs.size() != 2) return false;
  const std::string& y = n.outputs[0];
  const std::string& b = add->inputs[0] == y ? add->inputs[1] : add->inputs[0];
  auto it = g.initializers.find(b);
  const ir::TensorType* ty = g.type_of(y);
  if (b == y || it == g.initializers.end() || !ty || !ty->is_static() || ty->dims.empty()) return false;
  const Tensor& bias = it->second;
  if (bias.dtype() != ty->dtype || bias.rank() == 0 || bias.shape().back() != ty->dims.back().value ||
      bias.numel() != bias.shape().back() || !f.same_type(y, add->outputs[0]))
    return false;
  n.inputs = {n.inputs[0], n.inputs[1], b};
  f.absorb(n, *add);
  return true;
}

}  // namespace

PassResult fuse_matmul(ir::Graph& g, const PassOptions&) {
  PassResult r;
  try_infer_shapes(g);
  EpilogueFuser f(g);
  int bias = 0, residual = 0, activation = 0, fused = 0;
  for (size_t idx : g.topo_order()) {
    ir::Node& n = *g.nodes[idx];
    if (!n.domain.empty() || n.op_type != "MatMul" || n.inputs.size() != 2 || n.outputs.size() != 1) continue;
    const ir::TensorType* t = g.type_of(n.outputs[0]);
    if (!t || (t->dtype != DType::Float32 && t->dtype != DType::Float64)) continue;
    const bool b = try_bias(g, f, n);
    const bool res = f.try_residual(n);
    const bool act = f.try_activation(n, true);
    if (!b && !res && !act) continue;
    n.op_type = "FusedMatMul";
    n.domain = "joule";
    bias += b;
    residual += res;
    activation += act;
    ++fused;
  }
  f.remove_absorbed();
  r.changed = fused > 0;
  r.info = {{"fused", fused}, {"with_bias", bias}, {"with_residual", residual}, {"with_activation", activation}};
  return r;
}

}  // namespace joule::passes
