#pragma once
// The algorithm a session chose for a node, as Session::choose_kernels records it in the node's
// metadata (meta["software"]["algorithm"]); "reference" when nothing chose one.
#include <string>

#include "joule/ir/graph.h"

namespace joule::runtime {

inline std::string algorithm_of(const ir::Node& n) {
  const auto& sw = n.meta["software"];
  return sw.contains("algorithm") && sw["algorithm"].is_string() ? sw["algorithm"].get<std::string>() : "reference";
}

}  // namespace joule::runtime
