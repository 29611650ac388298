#pragma once
// Small helpers for pattern passes that rewrite a subgraph into one fused node: find the
// producer of a value by op type, read scalar constants. A pattern pass turns the pattern's
// root into the fused node (keeping the root's output) and lets dead-node removal drop the
// interior, so interior values used elsewhere stay computed and the rewrite is always exact.
#include <cmath>
#include <string>
#include <unordered_map>

#include "joule/ir/graph.h"

namespace joule::passes {

class Match {
 public:
  explicit Match(const ir::Graph& g) : g_(g), prod_(g.producers()) {}

  // The ai.onnx node of type `op` producing `v`, or null.
  const ir::Node* producer(const std::string& v, const char* op) const {
    auto it = prod_.find(v);
    if (it == prod_.end()) return nullptr;
    const ir::Node* n = g_.nodes[it->second].get();
    return n->domain.empty() && n->op_type == op ? n : nullptr;
  }
  // A one-element float initializer (or Constant-folded value), as double.
  bool scalar(const std::string& v, double* out) const {
    auto it = g_.initializers.find(v);
    if (it == g_.initializers.end() || it->second.numel() != 1) return false;
    const DType t = it->second.dtype();
    if (t != DType::Float32 && t != DType::Float64 && t != DType::Float16) return false;
    *out = it->second.value_as_double(0);
    return true;
  }
  bool is_scalar(const std::string& v, double want, double tol = 1e-6) const {
    double x;
    return scalar(v, &x) && std::abs(x - want) <= tol * std::max(1.0, std::abs(want));
  }
  // For a binary node: the input that is not `v` (or "" when both are).
  static std::string other(const ir::Node& n, const std::string& v) {
    if (n.inputs.size() != 2) return "";
    return n.inputs[0] == v ? n.inputs[1] : n.inputs[1] == v ? n.inputs[0] : "";
  }

 private:
  const ir::Graph& g_;
  std::unordered_map<std::string, size_t> prod_;
};

}  // namespace joule::passes
