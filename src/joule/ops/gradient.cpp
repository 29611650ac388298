// Gradient (domain ai.onnx.preview.training, opset 1): the gradients of the value named by `y`
// (of the sum of its elements when it is not a scalar) with respect to the values named by
// `xs`, the values named by `zs` held constant. The node is not run by a kernel: loading a model
// through joule's API (api::Model) replaces it by the backward graph that joule's trainer builds
// over the IR (train::expand_gradient_nodes), so the gradients run on the ordinary kernels.
#include "joule/ops/util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  const std::vector<std::string> xs = c.node.attr_strings("xs");
  if (xs.empty() || c.node.attr_string("y", "").empty())
    fail(c.node.where() + ": the attributes xs and y are required");
  if (c.output_types.size() != xs.size())
    fail(c.node.where() + ": " + std::to_string(xs.size()) + " values in xs but " + std::to_string(c.output_types.size()) +
         " outputs");
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i >= c.num_inputs() || c.node.inputs[i] != xs[i])
      fail(c.node.where() + ": input " + std::to_string(i) + " must be '" + xs[i] + "' (the inputs are xs, then zs)");
    c.out(i) = c.in(i);
  }
}

void run(KernelContext& c) {
  fail_unsupported(c.node.where() + ": Gradient nodes are expanded into their backward graph when the model is loaded "
                   "through joule's API (api::Model, the CLI, Python); a bare Session cannot run one");
}

}  // namespace

extern const OpDef kOpGradient;
const OpDef kOpGradient{"Gradient", "ai.onnx.preview.training", 1, -1, infer, run};

}  // namespace joule::ops
