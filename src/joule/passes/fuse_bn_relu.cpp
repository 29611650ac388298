// BatchNormalization followed by Relu, on N,H,W,C tensors (DenseNet's pre-activation BN + ReLU
// before each conv, once channels_last has made the BN joule's N,H,W,C one): the Relu becomes
// the BN's `activation` = "Relu", one pass over the tensor instead of two. Only where the BN's
// output feeds the Relu alone and is no graph output. Runs after channels_last.
#include <unordered_set>

#include "joule/passes/pass.h"

namespace joule::passes {

PassResult fuse_bn_relu(ir::Graph& g, const PassOptions&) {
  PassResult r;
  const auto prod = g.producers();
  const auto cons = g.consumers();
  const std::unordered_set<std::string> outputs(g.outputs.begin(), g.outputs.end());
  int fused = 0;
  for (auto& up : g.nodes) {
    ir::Node& relu = *up;
    if (!relu.domain.empty() || relu.op_type != "Relu" || relu.inputs.size() != 1 || relu.outputs.size() != 1) continue;
    const auto p = prod.find(relu.inputs[0]);
    if (p == prod.end()) continue;
    const ir::Node& bn = *g.nodes[p->second];
    if (bn.domain != "joule" || bn.op_type != "BatchNormalization" || bn.attr_int("channels_last", 0) != 1 ||
        bn.has_attr("activation") || bn.outputs.size() != 1 || outputs.count(bn.outputs[0]))
      continue;
    const auto c = cons.find(bn.outputs[0]);
    if (c == cons.end() || c->second.size() != 1) continue;
    // The Relu node becomes the fused BN under its own output; the old BN is then dead.
    relu.op_type = bn.op_type;
    relu.domain = bn.domain;
    relu.inputs = bn.inputs;
    relu.attrs = bn.attrs;
    relu.attrs["activation"] = std::string("Relu");
    ++fused;
  }
  if (fused) g.remove_dead_nodes();
  r.changed = fused > 0;
  r.info = {{"fused", fused}};
  return r;
}

}  // namespace joule::passes
