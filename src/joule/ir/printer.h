#pragma once
#include <functional>
#include <string>

#include "joule/ir/graph.h"

namespace joule::ir {

// One line per node: "%out1, %out2 = Op[attrs](%in1, %in2)  # types", with inputs/outputs.
std::string to_text(const Graph& g);
// Graphviz DOT: nodes as boxes labelled with op type and name, edges labelled with shapes.
// `node_attrs` (optional) adds DOT attributes to a node's (e.g. fillcolor="#f00", tooltip="...").
std::string to_dot(const Graph& g, const std::function<std::string(const Node&)>& node_attrs = nullptr);
// `s` escaped for a double-quoted DOT string.
std::string dot_escape(const std::string& s);

}  // namespace joule::ir
