// Gradient rules of the neural-network ops: Conv (joule.ConvGradData / ConvGradWeight), Gemm
// and MatMul (as Gemm/MatMul of the gradient with the other operand), the normalisations
// (joule.BatchNormGrad, LayerNormGrad), the pools, Softmax/LogSoftmax, the losses and Dropout.
#include "joule/core/error.h"
#include "joule/train/grad.h"

namespace joule::train {
namespace {

std::map<std::string, ir::Attribute> copy_attrs(const ir::Node& n, std::initializer_list<const char*> names) {
  std::map<std::string, ir::Attribute> a;
  for (const char* k : names)
    if (auto it = n.attrs.find(k); it != n.attrs.end()) a[k] = it->second;
  return a;
}

void conv_rule(GradContext& c) {
  const auto geometry = {"kernel_shape", "strides", "dilations", "pads", "auto_pad", "group"};
  if (c.need[0]) {
    auto a = copy_attrs(c.node, geometry);
    a["input_shape"] = c.b.shape(c.in(0));
    c.dx[0] = c.b.add1("ConvGradData", {c.dy[0], c.in(1)}, a, "joule");
  }
  const bool bias = c.node.inputs.size() > 2 && c.need[2];
  if (c.need[1] || bias) {
    auto a = copy_attrs(c.node, geometry);
    a["weight_shape"] = c.b.shape(c.in(1));
    const auto outs = c.b.add("ConvGradWeight", {c.in(0), c.dy[0]}, a, bias ? 2 : 1, "joule");
    if (c.need[1]) c.dx[1] = outs[0];
    if (bias) c.dx[2] = outs[1];
  }
}

void gemm_rule(GradContext& c) {
  const int64_t ta = c.node.attr_int("transA", 0), tb = c.node.attr_int("transB", 0);
  const float alpha = c.node.attr_float("alpha", 1.f), beta = c.node.attr_float("beta", 1.f);
  auto gemm = [&](const std::string& x, const std::string& y, int64_t tx, int64_t ty) {
    return c.b.add1("Gemm", {x, y}, {{"alpha", alpha}, {"transA", tx}, {"transB", ty}});
  };
  // op(A) = A or A^T (transA), likewise B; Y = alpha op(A) op(B) + beta C.
  if (c.need[0]) c.dx[0] = ta ? gemm(c.in(1), c.dy[0], tb, 1) : gemm(c.dy[0], c.in(1), 0, 1 - tb);
  if (c.need[1]) c.dx[1] = tb ? gemm(c.dy[0], c.in(0), 1, ta) : gemm(c.in(0), c.dy[0], 1 - ta, 0);
  if (c.node.inputs.size() > 2 && c.need[2]) {
    const std::string g = beta == 1.f ? c.dy[0] : c.b.add1("Mul", {c.dy[0], c.b.scalar(beta, c.b.dtype(c.dy[0]))});
    c.dx[2] = c.b.sum_to(g, c.b.shape(c.in(2)));
  }
}

std::vector<int64_t> swap_last_two(size_t rank) {
  std::vector<int64_t> p(rank);
  for (size_t i = 0; i < rank; ++i) p[i] = static_cast<int64_t>(i);
  std::swap(p[rank - 1], p[rank - 2]);
  return p;
}

void matmul_rule(GradContext& c) {
  const Shape as = c.b.shape(c.in(0)), bs = c.b.shape(c.in(1));
  if (as.size() < 2 || bs.size() < 2) fail_unsupported(c.node.where() + ": the gradient of MatMul with a 1-D operand");
  if (c.need[0]) {
    const std::string bt = c.b.transpose(c.in(1), swap_last_two(bs.size()));
    c.dx[0] = c.b.sum_to(c.b.add1("MatMul", {c.dy[0], bt}), as);
  }
  if (c.need[1]) {
    if (bs.size() == 2) {  // weights: one GEMM over every row of every batch
      const int64_t k = as.back(), rows = shape_numel(as) / k;
      const std::string a2 = c.b.reshape(c.in(0), {rows, k});
      const std::string g2 = c.b.reshape(c.dy[0], {rows, bs[1]});
      c.dx[1] = c.b.add1("Gemm", {a2, g2}, {{"transA", int64_t{1}}});
    } else {
      const std::string at = c.b.transpose(c.in(0), swap_last_two(as.size()));
      c.dx[1] = c.b.sum_to(c.b.add1("MatMul", {at, c.dy[0]}), bs);
    }
  }
}

// BatchNormGrad's outputs to the inputs that want them (X, scale, B).
void bn_grads(GradContext& c, const std::string& mean, const std::string& invstd, bool training) {
  const auto outs = c.b.add("BatchNormGrad", {c.dy[0], c.in(0), c.in(1), mean, invstd},
                            {{"training", int64_t{training}}}, 3, "joule");
  for (size_t i = 0; i < 3; ++i)
    if (c.need[i]) c.dx[i] = outs[i];
  if (c.need[3] || c.need[4]) fail_unsupported(c.node.where() + ": the gradient of BatchNorm's running statistics");
}

// Inference BatchNormalization (frozen statistics): invstd from the running variance.
void batch_norm_rule(GradContext& c) {
  const DType dt = c.b.dtype(c.in(4));
  const std::string eps = c.b.scalar(c.node.attr_float("epsilon", 1e-5f), dt);
  const std::string invstd = c.b.add1("Reciprocal", {c.b.add1("Sqrt", {c.b.add1("Add", {c.in(4), eps})})});
  bn_grads(c, c.in(3), invstd, false);
}

void batch_norm_train_rule(GradContext& c) { bn_grads(c, c.out(3), c.out(4), true); }

void layer_norm_rule(GradContext& c) {
  ir::Node& n = c.node;
  if (n.outputs.size() < 3 || n.outputs[1].empty() || n.outputs[2].empty()) {
    n.outputs.resize(3);
    for (size_t i = 1; i < 3; ++i)
      if (n.outputs[i].empty()) n.outputs[i] = c.b.graph().unique_name(n.name + (i == 1 ? "/mean" : "/invstd"));
    if (c.b.dtype(c.in(0)) == DType::Float64) n.attrs["stash_type"] = int64_t{11};
    c.b.infer(n);
  }
  const auto outs = c.b.add("LayerNormGrad", {c.dy[0], c.in(0), c.in(1), n.outputs[1], n.outputs[2]},
                            {{"axis", n.attr_int("axis", -1)}}, 3, "joule");
  if (c.need[0]) c.dx[0] = outs[0];
  for (size_t i = 1; i < 3 && i < n.inputs.size(); ++i)
    if (c.need[i]) c.dx[i] = c.b.sum_to(outs[i], c.b.shape(c.in(i)));
}

const auto kPoolAttrs = {"kernel_shape", "strides", "pads", "dilations", "ceil_mode", "auto_pad", "storage_order",
                         "count_include_pad"};

void max_pool_rule(GradContext& c) {
  c.dx[0] = c.b.add1("MaxPoolGrad", {c.dy[0], c.in(0)}, copy_attrs(c.node, kPoolAttrs), "joule");
}

void global_max_pool_rule(GradContext& c) {
  const Shape xs = c.b.shape(c.in(0));
  c.dx[0] = c.b.add1("MaxPoolGrad", {c.dy[0], c.in(0)}, {{"kernel_shape", Shape(xs.begin() + 2, xs.end())}}, "joule");
}

void average_pool_rule(GradContext& c) {
  auto a = copy_attrs(c.node, kPoolAttrs);
  a["input_shape"] = c.b.shape(c.in(0));
  c.dx[0] = c.b.add1("AveragePoolGrad", {c.dy[0]}, a, "joule");
}

void global_average_pool_rule(GradContext& c) {
  c.dx[0] = c.b.add1("AveragePoolGrad", {c.dy[0]}, {{"input_shape", c.b.shape(c.in(0))}, {"global", int64_t{1}}}, "joule");
}

template <bool Log>
void softmax_rule(GradContext& c) {
  const bool old = c.b.graph().opset("") < 13;
  c.dx[0] = c.b.add1(Log ? "LogSoftmaxGrad" : "SoftmaxGrad", {c.dy[0], c.out(0)},
                     {{"axis", c.node.attr_int("axis", old ? 1 : -1)}, {"flatten", int64_t{old}}}, "joule");
}

void sce_rule(GradContext& c) {
  ir::Node& n = c.node;
  if (n.outputs.size() < 2 || n.outputs[1].empty()) {
    n.outputs.resize(2);
    n.outputs[1] = c.b.graph().unique_name(n.name + "/log_prob");
    c.b.infer(n);
  }
  std::vector<std::string> ins = {c.dy[0], n.outputs[1], c.in(1)};
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) ins.push_back(c.in(2));
  c.dx[0] = c.b.add1("SoftmaxCrossEntropyLossGrad", ins, copy_attrs(n, {"reduction", "ignore_index"}), "joule");
}

void nll_rule(GradContext& c) {
  std::vector<std::string> ins = {c.dy[0], c.in(1)};
  if (c.node.inputs.size() > 2 && !c.node.inputs[2].empty()) ins.push_back(c.in(2));
  auto a = copy_attrs(c.node, {"reduction", "ignore_index"});
  a["input_shape"] = c.b.shape(c.in(0));
  c.dx[0] = c.b.add1("NegativeLogLikelihoodLossGrad", ins, a, "joule");
}

void dropout_train_rule(GradContext& c) {
  c.dx[0] = c.b.add1("DropoutGrad", {c.dy[0], c.out(1)}, copy_attrs(c.node, {"ratio"}), "joule");
}

void pass_through(GradContext& c) { c.dx[0] = c.dy[0]; }

}  // namespace

const std::vector<GradDef>& nn_grads() {
  static const std::vector<GradDef> rules = {
      {"", "Conv", conv_rule},
      {"", "Gemm", gemm_rule},
      {"", "MatMul", matmul_rule},
      {"", "BatchNormalization", batch_norm_rule},
      {"joule", "BatchNormTrain", batch_norm_train_rule},
      {"", "LayerNormalization", layer_norm_rule},
      {"joule", "LayerNormalization", layer_norm_rule},
      {"", "MaxPool", max_pool_rule},
      {"", "GlobalMaxPool", global_max_pool_rule},
      {"", "AveragePool", average_pool_rule},
      {"", "GlobalAveragePool", global_average_pool_rule},
      {"", "Softmax", softmax_rule<false>},
      {"", "LogSoftmax", softmax_rule<true>},
      {"", "SoftmaxCrossEntropyLoss", sce_rule},
      {"", "NegativeLogLikelihoodLoss", nll_rule},
      {"joule", "DropoutTrain", dropout_train_rule},
      {"", "Dropout", pass_through},
  };
  return rules;
}

}  // namespace joule::train
