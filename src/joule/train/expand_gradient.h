#pragma once
// ONNX's in-graph gradient request (ai.onnx.preview.training Gradient) turned into ordinary
// nodes: the backward graph the trainer builds over the IR (build_backward), its results
// renamed to the Gradient node's outputs.
#include "joule/ir/graph.h"

namespace joule::train {

// Replaces every Gradient node of `g` by the nodes that compute its gradients (zeros where `y`
// does not depend on an x). Returns how many were expanded. Needs static shapes along the way
// from xs to y; throws Unsupported listing the ops without a gradient rule.
size_t expand_gradient_nodes(ir::Graph& g);

}  // namespace joule::train
