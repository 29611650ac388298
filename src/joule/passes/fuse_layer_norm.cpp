// LayerNorm as it arrives decomposed (PyTorch below opset 17):
//   m = ReduceMean(x, last axis); d = x - m; v = ReduceMean(d ^ 2 (Pow or d*d), last axis);
//   y = d / Sqrt(v + eps) * gamma + beta
// becomes one LayerNormalization(x, gamma, beta, axis=-1, epsilon=eps) (ONNX's from opset 17,
// joule's domain before). gamma and beta must be initializers of the last dim's size.
#include "joule/passes/infer_shapes.h"
#include "joule/passes/match.h"
#include "joule/passes/pass.h"

namespace joule::passes {

namespace {

// ReduceMean over only the last axis (keepdims) of `v`'s producer; returns its input or "".
std::string mean_last_axis(const ir::Graph& g, const Match& m, const std::string& v) {
  const ir::Node* r = m.producer(v, "ReduceMean");
  if (!r || r->attr_int("keepdims", 1) != 1) return "";
  std::vector<int64_t> axes = r->attr_ints("axes", {});
  if (r->has_input(1)) {
    auto it = g.initializers.find(r->inputs[1]);
    if (it == g.initializers.end()) return "";
    for (int64_t i = 0; i < it->second.numel(); ++i) axes.push_back(static_cast<int64_t>(it->second.value_as_double(i)));
  }
  const ir::TensorType* t = g.type_of(r->inputs[0]);
  if (axes.size() != 1 || !t || !t->has_shape) return "";
  const int64_t rank = static_cast<int64_t>(t->dims.size());
  if (axes[0] != -1 && axes[0] != rank - 1) return "";
  return r->inputs[0];
}

// The 1-D initializer of `c` elements among a binary node's inputs other than `v`.
std::string affine_param(const ir::Graph& g, const ir::Node& n, const std::string& v, int64_t c) {
  const std::string p = Match::other(n, v);
  auto it = g.initializers.find(p);
  if (it == g.initializers.end() || it->second.numel() != c || it->second.rank() != 1) return "";
  return p;
}

struct LayerNormParts {
  std::string x, gamma, beta;
  double eps = 0;
};

// Root Add(Mul(d / sqrt(var + eps), gamma), beta).
bool match(const ir::Graph& g, const Match& m, const ir::Node& root, LayerNormParts* p) {
  if (root.inputs.size() != 2) return false;
  for (const std::string& o : root.inputs) {
    const ir::Node* mul = m.producer(o, "Mul");
    if (!mul) continue;
    for (const std::string& q : mul->inputs) {
      const ir::Node* div = m.producer(q, "Div");
      if (!div) continue;
      const std::string& d = div->inputs[0];
      const ir::Node* sqrt = m.producer(div->inputs[1], "Sqrt");
      if (!sqrt) continue;
      const ir::Node* add = m.producer(sqrt->inputs[0], "Add");
      if (!add) continue;
      std::string var;
      for (const std::string& a : add->inputs)
        if (m.scalar(Match::other(*add, a), &p->eps)) var = a;
      if (var.empty()) continue;
      const std::string sq = mean_last_axis(g, m, var);
      if (sq.empty()) continue;
      bool squares_d = false;
      if (const ir::Node* pw = m.producer(sq, "Pow"); pw && pw->inputs[0] == d && m.is_scalar(pw->inputs[1], 2.0))
        squares_d = true;
      if (const ir::Node* mm = m.producer(sq, "Mul"); mm && mm->inputs.size() == 2 && mm->inputs[0] == d && mm->inputs[1] == d)
        squares_d = true;
      if (!squares_d) continue;
      const ir::Node* sub = m.producer(d, "Sub");
      if (!sub || mean_last_axis(g, m, sub->inputs[1]) != sub->inputs[0]) continue;
      p->x = sub->inputs[0];
      const ir::TensorType* t = g.type_of(p->x);
      if (!t || !t->has_shape || t->dims.empty() || !t->dims.back().is_static()) continue;
      const int64_t c = t->dims.back().value;
      p->gamma = affine_param(g, *mul, q, c);
      p->beta = affine_param(g, root, o, c);
      if (!p->gamma.empty() && !p->beta.empty()) return true;
    }
  }
  return false;
}

}  // namespace

PassResult fuse_layer_norm(ir::Graph& g, const PassOptions&) {
  PassResult r;
  try_infer_shapes(g);
  int fused = 0;
  {
    const Match m(g);
    for (auto& n : g.nodes) {
      if (!n->domain.empty() || n->op_type != "Add") continue;
      LayerNormParts p;
      if (!match(g, m, *n, &p)) continue;
      n->op_type = "LayerNormalization";
      n->domain = g.opset("") >= 17 ? "" : "joule";
      n->inputs = {p.x, p.gamma, p.beta};
      n->attrs = {{"axis", int64_t{-1}}, {"epsilon", static_cast<float>(p.eps)}};
      ++fused;
    }
  }
  if (fused) {
    if (g.opset("") < 17) g.opsets["joule"] = 1;
    g.remove_dead_nodes();
  }
  r.changed = fused > 0;
  r.info = {{"fused", fused}};
  return r;
}

}  // namespace joule::passes
