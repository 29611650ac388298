#pragma once
// The summary `joule info` prints: inputs/outputs with types, op histogram (the "layer
// dictionary"), parameters, per-node and total MACs/FLOPs, unsupported nodes.
#include <nlohmann/json.hpp>

#include "joule/ir/graph.h"

namespace joule::passes {

// Runs shape inference and cost annotation on `g` (modifies its types and metadata).
nlohmann::json model_info(ir::Graph& g);

}  // namespace joule::passes
