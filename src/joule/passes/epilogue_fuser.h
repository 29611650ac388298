#pragma once
// Epilogue fusion shared by fuse_conv and fuse_matmul: absorbs the single consumer of a node's
// output (a residual Add, an activation) into the node, moving the consumer's output to it.
// Only when each intermediate has a single consumer and is not a graph output; the residual
// must have the output's static shape and dtype; Clip needs constant bounds. The absorbed
// nodes are erased by remove_absorbed().
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "joule/ir/graph.h"

namespace joule::passes {

class EpilogueFuser {
 public:
  explicit EpilogueFuser(ir::Graph& g) : g_(g) {
    for (auto& o : g.outputs) outputs_.insert(o);
    rebuild_consumers();
  }

  // Consumers by node index, ignoring nodes already fused away (removed at the end).
  void rebuild_consumers() {
    cons_.clear();
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (removed_.count(g_.nodes[i].get())) continue;
      for (const std::string& in : g_.nodes[i]->inputs)
        if (!in.empty()) cons_[in].push_back(i);
    }
  }

  // The single consumer of `v`, or null.
  ir::Node* only_consumer(const std::string& v) {
    if (outputs_.count(v)) return nullptr;
    auto it = cons_.find(v);
    if (it == cons_.end() || it->second.size() != 1) return nullptr;
    ir::Node* c = g_.nodes[it->second[0]].get();
    return removed_.count(c) ? nullptr : c;
  }

  bool same_type(const std::string& a, const std::string& b) const {
    const ir::TensorType *ta = g_.type_of(a), *tb = g_.type_of(b);
    return ta && tb && ta->is_static() && tb->is_static() && ta->dtype == tb->dtype &&
           ta->static_shape() == tb->static_shape();
  }

  // Moves `n`'s output to `by`'s output and drops `by`.
  void absorb(ir::Node& n, ir::Node& by) {
    g_.types.erase(n.outputs[0]);
    n.outputs[0] = by.outputs[0];
    removed_.insert(&by);
    rebuild_consumers();
  }

  bool try_residual(ir::Node& n) {
    ir::Node* add = only_consumer(n.outputs[0]);
    if (!add || !add->domain.empty() || add->op_type != "Add" || add->inputs.size() != 2) return false;
    const std::string& y = n.outputs[0];
    const std::string& z = add->inputs[0] == y ? add->inputs[1] : add->inputs[0];
    if (z == y || z.empty() || !same_type(y, z) || !same_type(y, add->outputs[0])) return false;
    n.inputs.resize(4);
    n.inputs[3] = z;
    absorb(n, *add);
    return true;
  }

  // Relu, LeakyRelu, Clip (constant bounds) and, for a matmul, the erf Gelu (ONNX's or
  // joule's), for a conv Sigmoid, SiLU (joule's) and HardSwish (ONNX's or joule's) as `n`'s
  // activation (nn::FusedActivation).
  bool try_activation(ir::Node& n, bool matmul) {
    ir::Node* a = only_consumer(n.outputs[0]);
    const bool joule_op = a && a->domain == "joule" && (a->op_type == "Gelu" || a->op_type == "SiLU" || a->op_type == "HardSwish");
    if (!a || !(a->domain.empty() || joule_op)) return false;
    std::vector<float> params;
    if (a->op_type == "Gelu") {
      if (!matmul || a->attr_string("approximate", "none") != "none") return false;
    } else if (a->op_type == "Sigmoid" || a->op_type == "SiLU" || a->op_type == "HardSwish") {
      if (matmul) return false;
    } else if (a->op_type == "Relu") {
    } else if (a->op_type == "LeakyRelu") {
      params = {a->attr_float("alpha", 0.01f)};
    } else if (a->op_type == "Clip") {
      if (!clip_bounds(*a, &params)) return false;
    } else {
      return false;
    }
    n.attrs["activation"] = a->op_type;
    n.attrs["activation_params"] = params;
    absorb(n, *a);
    return true;
  }

  // Erases the absorbed nodes and declares the joule domain (for the fused ops); no-op when
  // nothing was absorbed.
  void remove_absorbed() {
    if (removed_.empty()) return;
    std::erase_if(g_.nodes, [&](const std::unique_ptr<ir::Node>& n) { return removed_.count(n.get()) != 0; });
    g_.opsets["joule"] = 1;
    removed_.clear();
  }

 private:
  bool clip_bounds(const ir::Node& c, std::vector<float>* p) const {
    float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
    if (g_.opset(c.domain) < 11) {
      lo = c.attr_float("min", lo);
      hi = c.attr_float("max", hi);
    } else {
      for (size_t i = 1; i < 3; ++i) {
        if (!c.has_input(i)) continue;
        auto it = g_.initializers.find(c.inputs[i]);
        if (it == g_.initializers.end() || it->second.numel() != 1 || it->second.dtype() != DType::Float32) return false;
        (i == 1 ? lo : hi) = it->second.data<float>()[0];
      }
    }
    *p = {lo, hi};
    return true;
  }

  ir::Graph& g_;
  std::unordered_map<std::string, std::vector<size_t>> cons_;
  std::unordered_set<std::string> outputs_;
  std::unordered_set<const ir::Node*> removed_;
};

}  // namespace joule::passes
