#pragma once
#include <string>
#include <vector>

#include "joule/ir/graph.h"

namespace joule::passes {

// Structural and type checks: dangling inputs, values defined twice, cycles, outputs not
// produced, duplicate node names, and declared types (graph outputs) that disagree with
// inference. Returns one line per problem; empty when the graph is sound.
std::vector<std::string> verify(const ir::Graph& g);

// Throws BadInput with all problems when verify() finds any.
void require_valid(const ir::Graph& g, const std::string& what);

}  // namespace joule::passes
