#include "joule/passes/check_support.h"

#include "joule/ops/op.h"

namespace joule::passes {

std::vector<std::string> find_unsupported(const ir::Graph& g) {
  std::vector<std::string> out;
  for (auto& n : g.nodes) {
    const ops::OpDef* def = ops::find_op(n->domain, n->op_type);
    if (!def) {
      out.push_back(n->where() + ": no such op in joule");
      continue;
    }
    const int count = static_cast<int>(n->captured.empty() ? n->input_count() : n->explicit_inputs());
    if (count < def->min_inputs || (def->max_inputs >= 0 && count > def->max_inputs)) {
      out.push_back(n->where() + ": has " + std::to_string(count) + " inputs, expected " +
                    std::to_string(def->min_inputs) +
                    (def->max_inputs < 0 ? " or more" : ".." + std::to_string(def->max_inputs)));
      continue;
    }
    if (def->check) {
      std::string why = def->check(*n, g.opset(n->domain));
      if (!why.empty()) out.push_back(n->where() + ": " + why);
    }
    // The nodes of its bodies (If branches, Loop and Scan bodies), at any depth.
    for (auto& [k, a] : n->attrs)
      if (auto* body = std::get_if<ir::GraphRef>(&a))
        for (const std::string& why : find_unsupported(**body)) out.push_back(n->where() + " attribute '" + k + "': " + why);
  }
  return out;
}

void require_supported(const ir::Graph& g, const std::string& what) {
  auto bad = find_unsupported(g);
  if (bad.empty()) return;
  std::string msg = what + ": " + std::to_string(bad.size()) + " unsupported node" +
                    (bad.size() == 1 ? "" : "s") + ": ";
  for (size_t i = 0; i < bad.size(); ++i) msg += (i ? "; " : "") + bad[i];
  fail_unsupported(msg);
}

}  // namespace joule::passes
