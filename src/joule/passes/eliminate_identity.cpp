// Removes Identity, inference-mode Dropout and Cast to the dtype its input already has (exports
// of detectors carry float-to-float Casts of whole feature maps): their consumers read the input
// directly.
// Graph input and output names never change: when the removed node's output is a graph
// output, the producer of its input is renamed to produce it instead; when that is not
// possible (the input is a graph input, an initializer or itself a graph output), the node
// stays.
#include <algorithm>
#include <unordered_set>

#include "joule/passes/pass.h"

namespace joule::passes {

namespace {

bool is_graph_output(const ir::Graph& g, const std::string& v) {
  return std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end();
}

bool is_graph_input(const ir::Graph& g, const std::string& v) {
  return std::find(g.inputs.begin(), g.inputs.end(), v) != g.inputs.end();
}

// The value of `v` when it is an initializer or a Constant node's tensor (this pass may run
// before fold_constants); nullptr otherwise.
const Tensor* constant_value(const ir::Graph& g, const std::string& v) {
  if (auto it = g.initializers.find(v); it != g.initializers.end()) return &it->second;
  for (auto& m : g.nodes)
    if (m->op_type == "Constant" && m->domain.empty() && !m->outputs.empty() && m->outputs[0] == v)
      return m->attr_tensor("value");
  return nullptr;
}

// Dropout is the identity at inference unless opset >= 12 gives a training_mode input that
// is not a known false (or the ratio is not a known 0); its mask output must be unused.
bool removable_dropout(const ir::Graph& g, const ir::Node& n, const std::unordered_set<std::string>& used) {
  if (n.outputs.size() > 1 && !n.outputs[1].empty() && used.count(n.outputs[1])) return false;
  if (g.opset(n.domain) >= 12 && n.has_input(2)) {
    const Tensor* tm = constant_value(g, n.inputs[2]);
    if (!tm) return false;
    bool training = tm->numel() >= 1 && tm->value_as_int(0) != 0;
    if (!training) return true;
    if (!n.has_input(1)) return false;  // default ratio 0.5
    const Tensor* r = constant_value(g, n.inputs[1]);
    return r && r->numel() >= 1 && r->value_as_double(0) == 0.0;
  }
  return true;
}

}  // namespace

PassResult eliminate_identity(ir::Graph& g, const PassOptions&) {
  PassResult r;
  int identity = 0, dropout = 0, cast = 0, kept = 0, renamed = 0;
  std::unordered_set<const ir::Node*> removed;
  for (size_t idx : g.topo_order()) {
    ir::Node& n = *g.nodes[idx];
    if (!n.domain.empty() || (n.op_type != "Identity" && n.op_type != "Dropout" && n.op_type != "Cast")) continue;
    if (!n.has_input(0) || n.outputs.empty() || n.outputs[0].empty()) continue;
    if (n.op_type == "Cast") {  // only where the input's dtype is known and is the target
      const ir::TensorType* t = g.type_of(n.inputs[0]);
      if (!t || t->dtype == DType::Undefined || t->dtype != dtype_from_onnx(static_cast<int>(n.attr_int("to", 0)))) continue;
    }
    std::unordered_set<std::string> used(g.outputs.begin(), g.outputs.end());
    for (auto& m : g.nodes)
      if (!removed.count(m.get()))
        for (auto& in : m->inputs) used.insert(in);
    if (n.op_type == "Dropout" && !removable_dropout(g, n, used)) continue;
    const std::string in = n.inputs[0], out = n.outputs[0];
    if (is_graph_output(g, out)) {
      // Keep the output name: the producer of `in` produces `out` instead.
      auto prod = g.producers();
      auto p = prod.find(in);
      if (p == prod.end() || is_graph_output(g, in) || is_graph_input(g, in) || g.is_initializer(in)) {
        ++kept;
        continue;
      }
      for (auto& o : g.nodes[p->second]->outputs)
        if (o == in) o = out;
      replace_uses(g, in, out);
      if (!g.types.count(out) && g.types.count(in)) g.types[out] = g.types[in];
      g.types.erase(in);
      ++renamed;
    } else {
      replace_uses(g, out, in);
      g.types.erase(out);
    }
    removed.insert(&n);
    (n.op_type == "Identity" ? identity : n.op_type == "Cast" ? cast : dropout)++;
  }
  if (!removed.empty()) {
    std::erase_if(g.nodes, [&](const std::unique_ptr<ir::Node>& n) { return removed.count(n.get()) != 0; });
    r.changed = true;
  }
  r.info = {{"identity_removed", identity}, {"dropout_removed", dropout}, {"same_type_cast_removed", cast},
            {"producers_renamed", renamed},
            {"kept_for_graph_output", kept}};
  return r;
}

}  // namespace joule::passes
