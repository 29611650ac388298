#include "joule/passes/verify.h"

#include <set>

#include "joule/passes/infer_shapes.h"

namespace joule::passes {

std::vector<std::string> verify(const ir::Graph& g) {
  std::vector<std::string> bad;
  std::set<std::string> defined(g.inputs.begin(), g.inputs.end());
  for (auto& [k, v] : g.initializers) defined.insert(k);
  std::set<std::string> names;
  for (auto& n : g.nodes) {
    if (!names.insert(n->name).second) bad.push_back(n->where() + ": node name used twice");
    for (auto& o : n->outputs) {
      if (o.empty()) continue;
      if (!defined.insert(o).second) bad.push_back(n->where() + ": output '" + o + "' is defined twice");
    }
  }
  for (auto& n : g.nodes)
    for (auto& in : n->inputs)
      if (!in.empty() && !defined.count(in))
        bad.push_back(n->where() + ": input '" + in + "' is not produced by any node, input or initializer");
  for (auto& o : g.outputs)
    if (!defined.count(o)) bad.push_back("graph output '" + o + "' is not produced by any node");
  try {
    g.topo_order();
  } catch (const Error& e) {
    bad.push_back(e.what());
  }
  if (!bad.empty()) return bad;

  // Types: declared graph output types against inference.
  ir::Graph copy = g;
  try {
    infer_shapes(copy);
  } catch (const Error& e) {
    bad.push_back(e.what());
    return bad;
  }
  for (auto& o : g.outputs) {
    const ir::TensorType* declared = g.type_of(o);
    const ir::TensorType* inferred = copy.type_of(o);
    if (!declared || !inferred || inferred->dtype == DType::Undefined) continue;
    if (declared->dtype != inferred->dtype) {
      bad.push_back("graph output '" + o + "': declared " + declared->str() + " but computed " + inferred->str());
      continue;
    }
    if (declared->has_shape && inferred->has_shape) {
      bool ok = declared->dims.size() == inferred->dims.size();
      for (size_t i = 0; ok && i < declared->dims.size(); ++i)
        if (declared->dims[i].is_static() && inferred->dims[i].is_static() &&
            declared->dims[i].value != inferred->dims[i].value)
          ok = false;
      if (!ok) bad.push_back("graph output '" + o + "': declared " + declared->str() + " but computed " + inferred->str());
    }
  }
  return bad;
}

void require_valid(const ir::Graph& g, const std::string& what) {
  auto bad = verify(g);
  if (bad.empty()) return;
  std::string msg = what + ": invalid graph: ";
  for (size_t i = 0; i < bad.size(); ++i) msg += (i ? "; " : "") + bad[i];
  fail(msg);
}

}  // namespace joule::passes
