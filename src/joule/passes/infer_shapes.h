#pragma once
// Shape and type inference over the whole graph, with constant propagation through shape
// subgraphs (Shape/Gather/Concat/Range/...): every op's own inference runs in topological
// order, and nodes whose inputs are all small known constants are evaluated with their
// reference kernel so that Reshape/Expand/Slice downstream see concrete values.
#include <map>
#include <string>
#include <unordered_map>

#include "joule/ir/graph.h"

namespace joule::passes {

struct InferResult {
  std::unordered_map<std::string, Tensor> constants;  // values known without running the model
  size_t nodes_unknown = 0;                           // nodes whose outputs stayed unshaped
};

// Writes g.types for every value it can. `input_shapes` overrides graph input shapes (for
// --input-size / --batch). Throws BadInput naming the node when a model is inconsistent.
InferResult infer_shapes(ir::Graph& g, const std::map<std::string, Shape>& input_shapes = {});

// For rewriting passes: infers what it can; a graph inference rejects (BadInput) is left for
// the Session to report with its own message, and false is returned. Internal errors throw.
bool try_infer_shapes(ir::Graph& g);

}  // namespace joule::passes
