#pragma once
#include <string>
#include <vector>

#include "joule/ir/graph.h"

namespace joule::passes {

// Every node joule cannot run, one line each ("node 'x' (Foo): no such op in joule"), so that
// a user sees all of them at once. Empty when the whole graph is supported.
std::vector<std::string> find_unsupported(const ir::Graph& g);

// Throws Unsupported listing every unsupported node when there is any.
void require_supported(const ir::Graph& g, const std::string& what);

}  // namespace joule::passes
