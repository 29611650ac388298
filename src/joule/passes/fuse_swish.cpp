// Self-gated activations as PyTorch exports them become one node: Mul(x, Sigmoid(x)) (SiLU,
// Swish) becomes joule's SiLU, and Mul(x, HardSigmoid(x, alpha=1/6, beta=0.5)) (HardSwish below
// opset 14) becomes HardSwish (ONNX's from opset 14, joule's domain before). One pass over the
// tensor instead of two, no intermediate, and a node that conv/matmul epilogues can absorb.
#include <cmath>

#include "joule/passes/match.h"
#include "joule/passes/pass.h"

namespace joule::passes {

namespace {

bool is_hard_swish_gate(const ir::Node& hs) {
  return std::abs(hs.attr_float("alpha", 0.2f) - 1.0 / 6.0) <= 1e-6 && std::abs(hs.attr_float("beta", 0.5f) - 0.5) <= 1e-6;
}

}  // namespace

PassResult fuse_swish(ir::Graph& g, const PassOptions&) {
  PassResult r;
  int silu = 0, hard_swish = 0;
  {
    const Match m(g);
    for (auto& n : g.nodes) {
      if (!n->domain.empty() || n->op_type != "Mul" || n->inputs.size() != 2) continue;
      for (const std::string& h : n->inputs) {
        const ir::Node* gate = m.producer(h, "Sigmoid");
        const bool hard = !gate;
        if (hard) gate = m.producer(h, "HardSigmoid");
        if (!gate || gate->inputs.empty() || Match::other(*n, h) != gate->inputs[0]) continue;
        if (hard && !is_hard_swish_gate(*gate)) continue;
        const std::string x = gate->inputs[0];
        n->op_type = hard ? "HardSwish" : "SiLU";
        n->domain = hard && g.opset("") >= 14 ? "" : "joule";
        n->inputs = {x};
        n->attrs.clear();
        ++(hard ? hard_swish : silu);
        break;
      }
    }
  }
  if (silu + hard_swish) {
    g.opsets["joule"] = 1;
    g.remove_dead_nodes();
  }
  r.changed = silu + hard_swish > 0;
  r.info = {{"silu", silu}, {"hard_swish", hard_swish}};
  return r;
}

}  // namespace joule::passes
