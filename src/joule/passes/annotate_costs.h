#pragma once
// Analysis pass: writes each node's shapes and arithmetic cost into node metadata
// (meta["common"]: op, inputs/outputs shapes, macs, flops, bytes; params) and returns totals.
#include "joule/ir/graph.h"

namespace joule::passes {

struct CostTotals {
  double macs = 0, flops = 0, bytes = 0;
  size_t nodes_without_shapes = 0;  // nodes whose cost could not be computed
};

// Requires g.types from infer_shapes.
CostTotals annotate_costs(ir::Graph& g);

}  // namespace joule::passes
