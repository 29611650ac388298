// The optimizer ops of domain ai.onnx.preview.training (opset 1), inputs R (learning rate,
// scalar), T (update count, int64 scalar), then n tensors X, their gradients G and their states;
// outputs the new X, then the new states (n of each). Every state and gradient has its X's shape
// (joule does not broadcast them); the update runs elementwise in double:
//   Adagrad(X, G, H): r = R / (1 + T decay_factor), g = norm_coefficient X + G,
//     H' = H + g^2, X' = X - r g / (sqrt(H') + epsilon).
//   Momentum(X, G, V): g = norm_coefficient X + G, V' = alpha V + (T > 0 ? beta : 1) g;
//     mode "standard": X' = X - R V', "nesterov": X' = X - R (g + alpha V').
//   Adam(X, G, V, H): g = norm_coefficient X + G, V' = alpha V + (1 - alpha) g,
//     H' = beta H + (1 - beta) g^2, R' = T > 0 ? R sqrt(1 - beta^T) / (1 - alpha^T) : R,
//     X' = (1 - norm_coefficient_post) (X - R' V' / (sqrt(H') + epsilon)).
#include <cmath>

#include "joule/ops/util.h"

namespace joule::ops {
namespace {

constexpr const char* kDomain = "ai.onnx.preview.training";

// Tensors per optimized variable among the inputs (X, G and the states); outputs have one fewer.
int64_t per_variable(const ir::Node& n) { return n.op_type == "Adam" ? 4 : 3; }

std::string check(const ir::Node& n, int64_t) {
  const int64_t k = per_variable(n), vars = (static_cast<int64_t>(n.input_count()) - 2) / k;
  if (vars < 1 || static_cast<int64_t>(n.input_count()) != 2 + k * vars)
    return "needs R, T and " + std::to_string(k) + " inputs per optimized tensor, got " + std::to_string(n.input_count()) + " inputs";
  if (static_cast<int64_t>(n.outputs.size()) != (k - 1) * vars)
    return "needs " + std::to_string((k - 1) * vars) + " outputs for " + std::to_string(vars) + " optimized tensors";
  if (n.op_type == "Momentum") {
    for (const char* a : {"alpha", "beta", "mode", "norm_coefficient"})
      if (!n.has_attr(a)) return std::string("attribute '") + a + "' is required";
    const std::string mode = n.attr_string("mode", "");
    if (mode != "standard" && mode != "nesterov") return "mode '" + mode + "' (standard or nesterov)";
  }
  return "";
}

// Input index of output j: new X from X, new state s from state s (inputs skip the gradients).
size_t source_input(const ir::Node& n, size_t j) {
  const size_t vars = (n.input_count() - 2) / static_cast<size_t>(per_variable(n)), group = j / vars;
  return 2 + (group == 0 ? 0 : group + 1) * vars + j % vars;
}

void infer(InferContext& c) {
  for (size_t j = 0; j < c.output_types.size(); ++j) c.out(j) = c.in(source_input(c.node, j));
}

void run(KernelContext& c) {
  const ir::Node& n = c.node;
  for (size_t i = 0; i < 2; ++i)
    if (c.in(i).numel() != 1) fail(n.where() + ": " + (i ? "T" : "R") + " must be a scalar, got " + c.in(i).describe());
  const double R = c.in(0).value_as_double(0);
  const int64_t T = c.in(1).value_as_int(0);
  const int64_t k = per_variable(n);
  const size_t vars = (n.input_count() - 2) / static_cast<size_t>(k);
  const double norm = n.attr_float("norm_coefficient", 0.f), eps = n.attr_float("epsilon", 1e-6f);
  const double alpha = n.attr_float("alpha", 0.9f), beta = n.attr_float("beta", 0.999f);
  const double adam_rate = T > 0 ? R * std::sqrt(1 - std::pow(beta, static_cast<double>(T))) / (1 - std::pow(alpha, static_cast<double>(T))) : R;
  const double adagrad_rate = R / (1 + static_cast<double>(T) * n.attr_float("decay_factor", 0.f));
  const bool nesterov = n.attr_string("mode", "standard") == "nesterov";
  const double post = 1 - n.attr_float("norm_coefficient_post", 0.f);
  for (size_t v = 0; v < vars; ++v) {
    const Tensor& X = c.in(2 + v);
    if (!is_floating(X.dtype())) fail(n.where() + ": optimized tensors must be floating point, got " + X.describe());
    // in[0] = X, in[1] = G, in[2..] = the states; out[0] = new X, out[1..] = the new states.
    std::vector<Tensor> in(static_cast<size_t>(k)), out(static_cast<size_t>(k - 1));
    for (int64_t g = 0; g < k; ++g) {
      const Tensor& t = c.in(2 + static_cast<size_t>(g) * vars + v);
      if (t.shape() != X.shape()) fail(n.where() + ": " + t.describe() + " must have the shape of its X, " + X.describe());
      in[static_cast<size_t>(g)] = t.cast(DType::Float64);
    }
    for (auto& o : out) o = Tensor(DType::Float64, X.shape());
    const double *x = in[0].data<double>(), *grad = in[1].data<double>(), *s1 = in[2].data<double>();
    const double* s2 = k > 3 ? in[3].data<double>() : nullptr;
    double *xn = out[0].data<double>(), *s1n = out[1].data<double>(), *s2n = k > 3 ? out[2].data<double>() : nullptr;
    for (int64_t i = 0; i < X.numel(); ++i) {
      const double g = norm * x[i] + grad[i];
      if (n.op_type == "Adagrad") {
        s1n[i] = s1[i] + g * g;
        xn[i] = x[i] - adagrad_rate * g / (std::sqrt(s1n[i]) + eps);
      } else if (n.op_type == "Momentum") {
        s1n[i] = alpha * s1[i] + (T > 0 ? beta : 1.0) * g;
        xn[i] = x[i] - R * (nesterov ? g + alpha * s1n[i] : s1n[i]);
      } else {  // Adam
        s1n[i] = alpha * s1[i] + (1 - alpha) * g;
        s2n[i] = beta * s2[i] + (1 - beta) * g * g;
        xn[i] = post * (x[i] - adam_rate * s1n[i] / (std::sqrt(s2n[i]) + eps));
      }
    }
    for (size_t o = 0; o < out.size(); ++o)
      if (o * vars + v < c.outputs.size()) c.outputs[o * vars + v] = out[o].cast(c.in(source_input(n, o * vars + v)).dtype());
  }
}

}  // namespace

extern const OpDef kOpAdagrad, kOpMomentum, kOpAdam;
const OpDef kOpAdagrad{"Adagrad", kDomain, 5, -1, infer, run, nullptr, check};
const OpDef kOpMomentum{"Momentum", kDomain, 5, -1, infer, run, nullptr, check};
const OpDef kOpAdam{"Adam", kDomain, 6, -1, infer, run, nullptr, check};

}  // namespace joule::ops
