// Erf-GELU as PyTorch exports it, x * 0.5 * (1 + erf(x / sqrt 2)) in either association
// (Mul(Mul(x, 1 + erf(..)), 0.5) or Mul(Mul(x, 0.5), 1 + erf(..))), and with x * (1/sqrt 2)
// instead of the Div, becomes one Gelu node (ONNX's from opset 20, joule's domain before).
#include "joule/passes/match.h"
#include "joule/passes/pass.h"

namespace joule::passes {

namespace {

// "1 + erf(x / sqrt 2)" producing `v`: returns x, or "".
std::string erf_term(const Match& m, const std::string& v) {
  const ir::Node* add = m.producer(v, "Add");
  if (!add) return "";
  for (const std::string& e : add->inputs) {
    if (!m.is_scalar(Match::other(*add, e), 1.0)) continue;
    const ir::Node* erf = m.producer(e, "Erf");
    if (!erf) continue;
    const std::string& d = erf->inputs[0];
    if (const ir::Node* div = m.producer(d, "Div"); div && m.is_scalar(div->inputs[1], std::sqrt(2.0), 1e-4))
      return div->inputs[0];
    if (const ir::Node* mul = m.producer(d, "Mul"))
      for (const std::string& x : mul->inputs)
        if (m.is_scalar(Match::other(*mul, x), 1.0 / std::sqrt(2.0), 1e-4)) return x;
  }
  return "";
}

// Root Mul(a, b): returns x when the root computes gelu(x), else "".
std::string gelu_input(const Match& m, const ir::Node& root) {
  if (root.inputs.size() != 2) return "";
  for (int i = 0; i < 2; ++i) {
    const std::string& a = root.inputs[i];
    const std::string& b = root.inputs[1 - i];
    // Mul(Mul(x, 1+erf), 0.5)
    if (m.is_scalar(b, 0.5))
      if (const ir::Node* inner = m.producer(a, "Mul"))
        for (const std::string& t : inner->inputs) {
          const std::string x = Match::other(*inner, t);
          if (!x.empty() && erf_term(m, t) == x) return x;
        }
    // Mul(Mul(x, 0.5), 1+erf)
    if (const ir::Node* half = m.producer(a, "Mul"))
      for (const std::string& x : half->inputs)
        if (m.is_scalar(Match::other(*half, x), 0.5) && erf_term(m, b) == x) return x;
  }
  return "";
}

}  // namespace

PassResult fuse_gelu(ir::Graph& g, const PassOptions&) {
  PassResult r;
  int fused = 0;
  {
    const Match m(g);
    for (auto& n : g.nodes) {
      if (!n->domain.empty() || n->op_type != "Mul") continue;
      const std::string x = gelu_input(m, *n);
      if (x.empty()) continue;
      n->op_type = "Gelu";
      n->domain = g.opset("") >= 20 ? "" : "joule";
      n->inputs = {x};
      n->attrs.clear();
      ++fused;
    }
  }
  if (fused) {
    if (g.opset("") < 20) g.opsets["joule"] = 1;
    g.remove_dead_nodes();
  }
  r.changed = fused > 0;
  r.info = {{"fused", fused}};
  return r;
}

}  // namespace joule::passes
