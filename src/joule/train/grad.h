#pragma once
// The gradient graph as IR (the ONNX Runtime Training / tinygrad way): for a model with static
// shapes, a backward graph built node by node in reverse order, one gradient rule per op
// (rules_nn.cpp, rules_elementwise.cpp, rules_tensor.cpp), in ordinary ops (Gemm, MatMul,
// Mul, ReduceSum, ...) and joule's gradient ops (ConvGradData, BatchNormGrad, ...), so the same
// Session, memory planner, kernels and profiler run it.
#include <map>
#include <string>
#include <vector>

#include "joule/ir/graph.h"

namespace joule::train {

// Adds nodes to the graph being built, keeping g.types up to date (each new node's output types
// come from its op's own inference).
class GradBuilder {
 public:
  explicit GradBuilder(ir::Graph& g) : g_(g) {}
  ir::Graph& graph() { return g_; }

  // Adds a node with `outputs` fresh outputs named after `hint`; returns their names.
  std::vector<std::string> add(const std::string& op, const std::vector<std::string>& inputs,
                               std::map<std::string, ir::Attribute> attrs = {}, size_t outputs = 1,
                               const std::string& domain = "", const std::string& hint = "");
  // The same with one output.
  std::string add1(const std::string& op, const std::vector<std::string>& inputs,
                   std::map<std::string, ir::Attribute> attrs = {}, const std::string& domain = "",
                   const std::string& hint = "");
  // A constant (an initializer of the graph).
  std::string constant(const Tensor& t, const std::string& hint = "const");
  std::string scalar(double v, DType dtype);       // a 0-d constant
  std::string ints(const std::vector<int64_t>& v);  // a 1-D int64 constant

  const ir::TensorType& type(const std::string& value) const;  // BadInput when unknown
  Shape shape(const std::string& value) const;                 // BadInput unless static
  DType dtype(const std::string& value) const { return type(value).dtype; }
  // The constant value of `value` (an initializer), or null.
  const Tensor* constant_value(const std::string& value) const;

  // Sums `grad` over the dims it was broadcast along so that it has `target`'s shape.
  std::string sum_to(const std::string& grad, const Shape& target);
  std::string reshape(const std::string& v, const Shape& to);
  std::string transpose(const std::string& v, const std::vector<int64_t>& perm);
  std::string sum(const std::vector<std::string>& parts);  // accumulates partial gradients
  std::string zeros(const Shape& s, DType dtype);

  // (Re)computes the output types of `n` from its op's inference (after a rule gave a forward
  // node an optional output it needs).
  void infer(ir::Node& n);

 private:
  ir::Graph& g_;
};

// What a rule sees of one forward node.
struct GradContext {
  GradBuilder& b;
  ir::Node& node;                // the forward node (a rule may add optional outputs it needs)
  std::vector<std::string> dy;   // per output: the gradient flowing back ("" when none)
  std::vector<bool> need;        // per input: whether a gradient is wanted
  std::vector<std::string> dx;   // per input: filled by the rule ("" for none)

  const std::string& in(size_t i) const { return node.inputs.at(i); }
  const std::string& out(size_t i) const { return node.outputs.at(i); }
  // The gradient of output i, or zeros of its shape when none flows (rules with several outputs).
  std::string dy_or_zeros(size_t i);
};

using GradRule = void (*)(GradContext&);
struct GradDef {
  const char* domain;
  const char* op_type;
  GradRule rule;
};
// The rule of an op; null when joule has none.
const GradDef* find_grad(const std::string& domain, const std::string& op_type);

// Rules per family (one table each).
const std::vector<GradDef>& nn_grads();
const std::vector<GradDef>& elementwise_grads();
const std::vector<GradDef>& tensor_grads();
const std::vector<GradDef>& quant_grads();

// Builds the backward graph into `g` (which holds the forward graph and the loss): for every
// value in `wrt`, the name of its gradient with respect to the scalar value `loss`; "" where the
// loss does not depend on it. `requires_grad` is the set of values gradients flow through
// (everything computed from `wrt`). Throws Unsupported listing every op without a rule at once.
std::map<std::string, std::string> build_backward(ir::Graph& g, const std::string& loss,
                                                  const std::vector<std::string>& wrt);

}  // namespace joule::train
