// HardSwish as PyTorch exports it below opset 14, Mul(x, HardSigmoid(x, alpha=1/6, beta=0.5)),
// becomes one HardSwish node (ONNX's from opset 14, joule's domain before): one pass over the
// tensor instead of two, and no intermediate.
#include "joule/passes/match.h"
#include "joule/passes/pass.h"

namespace joule::passes {

PassResult fuse_hard_swish(ir::Graph& g, const PassOptions&) {
  PassResult r;
  int fused = 0;
  {
    const Match m(g);
    for (auto& n : g.nodes) {
      if (!n->domain.empty() || n->op_type != "Mul" || n->inputs.size() != 2) continue;
      std::string x;
      for (const std::string& h : n->inputs) {
        const ir::Node* hs = m.producer(h, "HardSigmoid");
        if (!hs || hs->inputs.empty() || Match::other(*n, h) != hs->inputs[0]) continue;
        if (std::abs(hs->attr_float("alpha", 0.2f) - 1.0 / 6.0) > 1e-6 || std::abs(hs->attr_float("beta", 0.5f) - 0.5) > 1e-6)
          continue;
        x = hs->inputs[0];
      }
      if (x.empty()) continue;
      n->op_type = "HardSwish";
      n->domain = g.opset("") >= 14 ? "" : "joule";
      n->inputs = {x};
      n->attrs.clear();
      ++fused;
    }
  }
  if (fused) {
    if (g.opset("") < 14) g.opsets["joule"] = 1;
    g.remove_dead_nodes();
  }
  r.changed = fused > 0;
  r.info = {{"fused", fused}};
  return r;
}

}  // namespace joule::passes
