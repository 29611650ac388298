// Dead-code elimination: nodes none of whose outputs reach a graph output (transitively),
// then initializers nothing reads, and the types of values that no longer exist.
#include <unordered_set>

#include "joule/passes/pass.h"

namespace joule::passes {

PassResult eliminate_dead_code(ir::Graph& g, const PassOptions&) {
  PassResult r;
  const size_t inits_before = g.initializers.size();
  const size_t nodes_removed = g.remove_dead_nodes();  // also drops unused initializers
  const size_t inits_removed = inits_before - g.initializers.size();
  std::unordered_set<std::string> live(g.inputs.begin(), g.inputs.end());
  live.insert(g.outputs.begin(), g.outputs.end());
  for (auto& [k, v] : g.initializers) live.insert(k);
  for (auto& n : g.nodes)
    for (auto& o : n->outputs) live.insert(o);
  const size_t types_before = g.types.size();
  std::erase_if(g.types, [&](const auto& kv) { return !live.count(kv.first); });
  r.changed = nodes_removed > 0 || inits_removed > 0;
  r.info = {{"nodes_removed", nodes_removed},
            {"initializers_removed", inits_removed},
            {"types_removed", types_before - g.types.size()}};
  return r;
}

}  // namespace joule::passes
