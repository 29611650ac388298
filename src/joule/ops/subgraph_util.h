#pragma once
// What If, Loop and Scan share: running a body graph (through the session's BodyRunner, which
// plans it on fast kernels, or the reference interpreter: node by node in topological order on
// the ops' reference kernels, every value kept until the body returns), the types a body
// declares, and slicing/stacking tensors along an axis for Scan and Loop.
#include <vector>

#include "joule/ops/op.h"

namespace joule::ops::subgraph {

// Runs `body` with its graph inputs bound, in order, to `inputs`, and the outer-scope values it
// reads bound to the node's captured inputs (c.inputs past node.explicit_inputs()); returns the
// body's outputs in order. Through c.bodies when the session gave one, else interpret().
std::vector<Tensor> run(const KernelContext& c, const ir::Graph& body, const std::vector<Tensor>& inputs);
// The same on the reference kernels (the oracle, and the fallback for a body that cannot be
// planned).
std::vector<Tensor> interpret(const KernelContext& c, const ir::Graph& body, const std::vector<Tensor>& inputs);

// The type body output i declares (dtype Undefined and no shape when it declares none).
ir::TensorType output_type(const ir::Graph& body, size_t i);

// x without axis `axis`, at index i along it.
Tensor take(const Tensor& x, int64_t axis, int64_t i);
// The tensors (one shape) stacked along a new axis `axis` of the result; `empty_shape` is the
// result when there are none.
Tensor stack(const std::vector<Tensor>& parts, int64_t axis, const Shape& empty_shape, DType empty_dtype);

}  // namespace joule::ops::subgraph
