#pragma once
#include <string>

#include "joule/ir/graph.h"

namespace joule::ir {

// One line per node: "%out1, %out2 = Op[attrs](%in1, %in2)  # types", with inputs/outputs.
std::string to_text(const Graph& g);
// Graphviz DOT: nodes as boxes labelled with op type and name, edges labelled with shapes.
std::string to_dot(const Graph& g);

}  // namespace joule::ir
