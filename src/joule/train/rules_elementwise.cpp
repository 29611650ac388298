// Gradient rules of the elementwise ops: arithmetic with broadcasting (gradients summed back to
// each operand's shape), activations and unary math (joule.ActivationGrad from the forward
// input), Where, Cast, Identity, Sum/Mean, joule's PruneActivation.
#include <limits>

#include "joule/core/error.h"
#include "joule/train/grad.h"

namespace joule::train {
namespace {

std::string sum_to_input(GradContext& c, const std::string& g, size_t i) { return c.b.sum_to(g, c.b.shape(c.in(i))); }

void add_rule(GradContext& c) {
  for (size_t i = 0; i < 2; ++i)
    if (c.need[i]) c.dx[i] = sum_to_input(c, c.dy[0], i);
}

void sub_rule(GradContext& c) {
  if (c.need[0]) c.dx[0] = sum_to_input(c, c.dy[0], 0);
  if (c.need[1]) c.dx[1] = c.b.add1("Neg", {sum_to_input(c, c.dy[0], 1)});
}

void mul_rule(GradContext& c) {
  for (size_t i = 0; i < 2; ++i)
    if (c.need[i]) c.dx[i] = sum_to_input(c, c.b.add1("Mul", {c.dy[0], c.in(1 - i)}), i);
}

void div_rule(GradContext& c) {
  if (c.need[0]) c.dx[0] = sum_to_input(c, c.b.add1("Div", {c.dy[0], c.in(1)}), 0);
  // d(a/b)/db = -(a/b)/b = -y/b
  if (c.need[1])
    c.dx[1] = sum_to_input(c, c.b.add1("Neg", {c.b.add1("Mul", {c.dy[0], c.b.add1("Div", {c.out(0), c.in(1)})})}), 1);
}

void pow_rule(GradContext& c) {
  if (c.need[1]) fail_unsupported(c.node.where() + ": the gradient of Pow with respect to the exponent");
  if (!c.need[0]) return;
  const Tensor* e = c.b.constant_value(c.in(1));
  if (!e || e->numel() != 1) fail_unsupported(c.node.where() + ": Pow's gradient needs a constant scalar exponent");
  const double p = e->value_as_double(0);
  const DType dt = c.b.dtype(c.in(0));
  // d(x^p)/dx = p x^(p-1)
  const std::string base = p == 2 ? c.in(0) : c.b.add1("Pow", {c.in(0), c.b.scalar(p - 1, dt)});
  c.dx[0] = sum_to_input(c, c.b.add1("Mul", {c.dy[0], c.b.add1("Mul", {base, c.b.scalar(p, dt)})}), 0);
}

void neg_rule(GradContext& c) { c.dx[0] = c.b.add1("Neg", {c.dy[0]}); }
void identity_rule(GradContext& c) { c.dx[0] = c.dy[0]; }

// dX = dY * f'(X) by joule.ActivationGrad with the node's kind and parameters.
void activation(GradContext& c, const std::string& kind, const std::vector<float>& params = {}) {
  c.dx[0] = c.b.add1("ActivationGrad", {c.dy[0], c.in(0)},
                     {{"activation", kind}, {"activation_params", params}}, "joule", kind + "Grad");
}

void relu_rule(GradContext& c) { activation(c, "Relu"); }

// joule.PruneActivation: the gradient reaches the values it kept (y == x), not those it zeroed.
void prune_activation_rule(GradContext& c) {
  const std::string kept = c.b.add1("Equal", {c.out(0), c.in(0)});
  c.dx[0] = c.b.add1("Where", {kept, c.dy[0], c.b.scalar(0, c.b.dtype(c.in(0)))});
}
void sigmoid_rule(GradContext& c) { activation(c, "Sigmoid"); }
void tanh_rule(GradContext& c) { activation(c, "Tanh"); }
void hard_swish_rule(GradContext& c) { activation(c, "HardSwish"); }
void softplus_rule(GradContext& c) { activation(c, "Softplus"); }
void erf_rule(GradContext& c) { activation(c, "Erf"); }
void exp_rule(GradContext& c) { activation(c, "Exp"); }
void log_rule(GradContext& c) { activation(c, "Log"); }
void sqrt_rule(GradContext& c) { activation(c, "Sqrt"); }
void abs_rule(GradContext& c) { activation(c, "Abs"); }
void reciprocal_rule(GradContext& c) { activation(c, "Reciprocal"); }
void pow2_ceil_rule(GradContext& c) { activation(c, "Pow2Ceil"); }
void leaky_relu_rule(GradContext& c) { activation(c, "LeakyRelu", {c.node.attr_float("alpha", 0.01f)}); }
void elu_rule(GradContext& c) { activation(c, "Elu", {c.node.attr_float("alpha", 1.0f)}); }
void hard_sigmoid_rule(GradContext& c) {
  activation(c, "HardSigmoid", {c.node.attr_float("alpha", 0.2f), c.node.attr_float("beta", 0.5f)});
}
void gelu_rule(GradContext& c) {
  activation(c, c.node.attr_string("approximate", "none") == "tanh" ? "GeluTanh" : "Gelu");
}

void clip_rule(GradContext& c) {
  if ((c.node.inputs.size() > 1 && c.need[1]) || (c.node.inputs.size() > 2 && c.need[2]))
    fail_unsupported(c.node.where() + ": the gradient of Clip with respect to its bounds");
  float lo = std::numeric_limits<float>::lowest(), hi = std::numeric_limits<float>::max();
  if (c.b.graph().opset("") < 11) {
    lo = c.node.attr_float("min", lo);
    hi = c.node.attr_float("max", hi);
  }
  for (size_t i = 1; i < 3 && i < c.node.inputs.size(); ++i) {
    if (c.node.inputs[i].empty()) continue;
    const Tensor* t = c.b.constant_value(c.in(i));
    if (!t) fail_unsupported(c.node.where() + ": Clip's gradient needs constant bounds");
    (i == 1 ? lo : hi) = static_cast<float>(t->value_as_double(0));
  }
  activation(c, "Clip", {lo, hi});
}

void where_rule(GradContext& c) {
  const std::string zero = c.b.scalar(0, c.b.dtype(c.dy[0]));
  if (c.need[1]) c.dx[1] = sum_to_input(c, c.b.add1("Where", {c.in(0), c.dy[0], zero}), 1);
  if (c.need[2]) c.dx[2] = sum_to_input(c, c.b.add1("Where", {c.in(0), zero, c.dy[0]}), 2);
}

void cast_rule(GradContext& c) {
  const DType from = c.b.dtype(c.in(0));
  c.dx[0] = c.b.dtype(c.dy[0]) == from ? c.dy[0]
                                       : c.b.add1("Cast", {c.dy[0]}, {{"to", int64_t{dtype_to_onnx(from)}}});
}

void sum_rule(GradContext& c) {
  for (size_t i = 0; i < c.node.inputs.size(); ++i)
    if (c.need[i]) c.dx[i] = sum_to_input(c, c.dy[0], i);
}

void mean_rule(GradContext& c) {
  const std::string g = c.b.add1("Mul", {c.dy[0], c.b.scalar(1.0 / static_cast<double>(c.node.inputs.size()), c.b.dtype(c.dy[0]))});
  for (size_t i = 0; i < c.node.inputs.size(); ++i)
    if (c.need[i]) c.dx[i] = sum_to_input(c, g, i);
}

}  // namespace

const std::vector<GradDef>& elementwise_grads() {
  static const std::vector<GradDef> rules = {
      {"", "Add", add_rule},           {"", "Sub", sub_rule},
      {"", "Mul", mul_rule},           {"", "Div", div_rule},
      {"", "Pow", pow_rule},           {"", "Neg", neg_rule},
      {"", "Identity", identity_rule}, {"", "Relu", relu_rule},
      {"", "LeakyRelu", leaky_relu_rule}, {"", "Sigmoid", sigmoid_rule},
      {"", "Tanh", tanh_rule},         {"", "HardSigmoid", hard_sigmoid_rule},
      {"", "HardSwish", hard_swish_rule}, {"joule", "HardSwish", hard_swish_rule},
      {"", "Elu", elu_rule},           {"", "Softplus", softplus_rule},
      {"", "Gelu", gelu_rule},         {"joule", "Gelu", gelu_rule},
      {"", "Erf", erf_rule},           {"", "Exp", exp_rule},
      {"", "Log", log_rule},           {"", "Sqrt", sqrt_rule},
      {"", "Abs", abs_rule},           {"", "Reciprocal", reciprocal_rule},
      {"", "Clip", clip_rule},         {"", "Where", where_rule},
      {"", "Cast", cast_rule},         {"", "Sum", sum_rule},
      {"", "Mean", mean_rule},         {"joule", "Pow2Ceil", pow2_ceil_rule},
      {"joule", "PruneActivation", prune_activation_rule},
  };
  return rules;
}

}  // namespace joule::train
