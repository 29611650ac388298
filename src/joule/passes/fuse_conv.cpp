// Conv epilogue fusion: Conv [-> Add(residual)] [-> Relu | LeakyRelu | Clip | Sigmoid | SiLU |
// HardSwish] becomes one
// joule FusedConv, so the residual sum and the activation happen while the output is still in
// cache (and oneDNN applies them as post-ops). Only when each intermediate has a single
// consumer and is not a graph output; the residual must have the output's static shape and
// dtype; Clip needs constant bounds. Arithmetic is unchanged: act(conv + bias + z).
#include "joule/passes/epilogue_fuser.h"
#include "joule/passes/infer_shapes.h"
#include "joule/passes/pass.h"

namespace joule::passes {

PassResult fuse_conv(ir::Graph& g, const PassOptions&) {
  PassResult r;
  try_infer_shapes(g);
  EpilogueFuser f(g);
  int residual = 0, activation = 0, fused = 0;
  for (size_t idx : g.topo_order()) {
    ir::Node& n = *g.nodes[idx];
    if (!n.domain.empty() || n.op_type != "Conv" || n.outputs.size() != 1) continue;
    const ir::TensorType* t = g.type_of(n.outputs[0]);
    if (!t || (t->dtype != DType::Float32 && t->dtype != DType::Float64)) continue;
    const bool res = f.try_residual(n);
    const bool act = f.try_activation(n, false);
    if (!res && !act) continue;
    n.op_type = "FusedConv";
    n.domain = "joule";
    if (n.inputs.size() == 2) n.inputs.push_back("");
    residual += res;
    activation += act;
    ++fused;
  }
  f.remove_absorbed();
  r.changed = fused > 0;
  r.info = {{"fused", fused}, {"with_residual", residual}, {"with_activation", activation}};
  return r;
}

}  // namespace joule::passes
