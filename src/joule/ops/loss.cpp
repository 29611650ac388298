// The losses ONNX defines (opset 12/13) and their gradients (joule domain):
//   NegativeLogLikelihoodLoss(input [N,C,d..], target [N,d..] (, weight [C])) -> loss
//   SoftmaxCrossEntropyLoss(scores [N,C,d..], labels [N,d..] (, weights [C])) -> loss (, log_prob)
// with reduction none | sum | mean and ignore_index. Per element (n, d) with class t:
// loss = -input[n,t,d] * w[t] (0 and weight 0 when t == ignore_index); `mean` divides the sum
// by the sum of the weights taken (the count of non-ignored elements without `weight`).
// SoftmaxCrossEntropyLoss is NegativeLogLikelihoodLoss of log_prob = LogSoftmax(scores, 1).
//   joule.SoftmaxCrossEntropyLossGrad(dloss, log_prob, labels (, weights)) -> dscores
//     = dloss[n,d] * w[t] / denom * (softmax - onehot(t))
//   joule.NegativeLogLikelihoodLossGrad(dloss, target (, weight); input_shape) -> dinput
//     = -dloss[n,d] * w[t] / denom at class t, 0 elsewhere
#include <cmath>
#include <limits>

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

enum class Reduction { None, Sum, Mean };

Reduction read_reduction(const ir::Node& n) {
  const std::string r = n.attr_string("reduction", "mean");
  if (r == "none") return Reduction::None;
  if (r == "sum") return Reduction::Sum;
  if (r == "mean") return Reduction::Mean;
  fail(n.where() + ": reduction '" + r + "' (none, sum or mean)");
}

// The element weights w[n,d] (0 where ignored) and their sum, from the targets.
struct Weighting {
  int64_t n = 0, c = 0, d = 0;  // batch, classes, elements per sample
  std::vector<int64_t> target;  // N*D, -1 where ignored
  std::vector<double> w;        // N*D
  double denom = 0;             // mean: sum of w; sum/none: 1
};

Weighting weigh(const ir::Node& node, const Shape& input, const Tensor& target, const Tensor* weight,
                Reduction red) {
  if (input.size() < 2) fail(node.where() + ": input must be [N, C, ...], got " + shape_str(input));
  Weighting r;
  r.n = input[0];
  r.c = input[1];
  r.d = r.n * r.c == 0 ? 0 : shape_numel(input) / (r.n * r.c);
  Shape want = {input[0]};
  want.insert(want.end(), input.begin() + 2, input.end());
  if (target.shape() != want)
    fail(node.where() + ": target " + target.describe() + " does not match the input " + shape_str(input));
  if (!is_integer(target.dtype())) fail(node.where() + ": target must be integers, got " + target.describe());
  if (weight && (weight->rank() != 1 || weight->dim(0) != r.c))
    fail(node.where() + ": weight " + weight->describe() + " must be [" + std::to_string(r.c) + "]");
  const bool has_ignore = node.has_attr("ignore_index");
  const int64_t ignore = node.attr_int("ignore_index", 0);
  const int64_t total = r.n * r.d;
  r.target.resize(static_cast<size_t>(total));
  r.w.resize(static_cast<size_t>(total));
  double sum = 0;
  for (int64_t i = 0; i < total; ++i) {
    const int64_t t = target.value_as_int(i);
    if (has_ignore && t == ignore) {
      r.target[i] = -1;
      r.w[i] = 0;
      continue;
    }
    if (t < 0 || t >= r.c)
      fail(node.where() + ": target " + std::to_string(t) + " at index " + std::to_string(i) + " is outside [0, " +
           std::to_string(r.c) + ")");
    r.target[i] = t;
    r.w[i] = weight ? weight->value_as_double(t) : 1.0;
    sum += r.w[i];
  }
  r.denom = red == Reduction::Mean ? sum : 1.0;
  return r;
}

// loss = NLL(logp, target) into output 0 (shape: target's for none, else scalar).
template <class T>
void nll(KernelContext& c, const Tensor& logp, const Weighting& wt, Reduction red) {
  const T* x = logp.data<T>();
  const int64_t total = wt.n * wt.d;
  if (red == Reduction::None) {
    Tensor& out = c.output(0, logp.dtype(), c.in(1).shape());
    T* o = out.data<T>();
    for (int64_t i = 0; i < total; ++i) {
      const int64_t n = i / wt.d, d = i % wt.d, t = wt.target[i];
      o[i] = t < 0 ? T(0) : static_cast<T>(-static_cast<double>(x[(n * wt.c + t) * wt.d + d]) * wt.w[i]);
    }
    return;
  }
  double s = 0;
  for (int64_t i = 0; i < total; ++i) {
    const int64_t n = i / wt.d, d = i % wt.d, t = wt.target[i];
    if (t >= 0) s -= static_cast<double>(x[(n * wt.c + t) * wt.d + d]) * wt.w[i];
  }
  Tensor& out = c.output(0, logp.dtype(), {});
  // A mean over no weight at all is 0/0: NaN, as ONNX Runtime and PyTorch give.
  *out.data<T>() = static_cast<T>(red == Reduction::Mean ? s / wt.denom : s);
}

// LogSoftmax over dim 1 of [N, C, D].
template <class T>
void log_softmax_dim1(const T* x, T* y, int64_t n, int64_t c, int64_t d) {
  for (int64_t b = 0; b < n; ++b)
    for (int64_t j = 0; j < d; ++j) {
      const T* xp = x + b * c * d + j;
      T* yp = y + b * c * d + j;
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < c; ++k) m = std::max(m, static_cast<double>(xp[k * d]));
      double s = 0;
      for (int64_t k = 0; k < c; ++k) s += std::exp(static_cast<double>(xp[k * d]) - m);
      const double lse = m + std::log(s);
      for (int64_t k = 0; k < c; ++k) yp[k * d] = static_cast<T>(static_cast<double>(xp[k * d]) - lse);
    }
}

void infer_loss(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  ir::TensorType& o = c.out(0);
  o.dtype = x.dtype;
  if (read_reduction(c.node) == Reduction::None) {
    const ir::TensorType& t = c.in(1);
    o.has_shape = t.has_shape;
    o.dims = t.dims;
  } else {
    o.has_shape = true;
    o.dims.clear();
  }
  if (c.output_types.size() > 1) c.out(1) = x;  // log_prob
}

void run_nll(KernelContext& c) {
  const Tensor& x = c.in(0);
  const Reduction red = read_reduction(c.node);
  const Weighting wt = weigh(c.node, x.shape(), c.in(1), c.has(2) ? c.inputs[2] : nullptr, red);
  visit_floating(x.dtype(), c.node.where(), [&](auto tag) { nll<typename decltype(tag)::type>(c, x, wt, red); });
}

void run_sce(KernelContext& c) {
  const Tensor& x = c.in(0);
  const Reduction red = read_reduction(c.node);
  const Weighting wt = weigh(c.node, x.shape(), c.in(1), c.has(2) ? c.inputs[2] : nullptr, red);
  visit_floating(x.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor logp(x.dtype(), x.shape());
    log_softmax_dim1(x.data<T>(), logp.data<T>(), wt.n, wt.c, wt.d);
    nll<T>(c, logp, wt, red);
    if (c.outputs.size() > 1) c.outputs[1] = logp;
  });
}

// d(loss)/d(element i) for every (n, d): dloss (scalar or per element) * w / denom.
std::vector<double> element_scale(const Tensor& dloss, const Weighting& wt, Reduction red, const ir::Node& node) {
  const int64_t total = wt.n * wt.d;
  if (red == Reduction::None ? dloss.numel() != total : dloss.numel() != 1)
    fail(node.where() + ": dloss " + dloss.describe() + " does not match the loss");
  std::vector<double> s(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) {
    const double g = dloss.value_as_double(red == Reduction::None ? i : 0);
    s[i] = wt.target[i] < 0 ? 0.0 : g * wt.w[i] / wt.denom;
  }
  return s;
}

Shape shape_attr(const ir::Node& n) {
  if (!n.has_attr("input_shape")) fail(n.where() + ": attribute input_shape is required");
  return n.attr_ints("input_shape");
}

void infer_sce_grad(InferContext& c) { c.out(0) = c.in(1); }

void run_sce_grad(KernelContext& c) {
  const Tensor& logp = c.in(1);
  const Reduction red = read_reduction(c.node);
  const Weighting wt = weigh(c.node, logp.shape(), c.in(2), c.has(3) ? c.inputs[3] : nullptr, red);
  const std::vector<double> s = element_scale(c.in(0), wt, red, c.node);
  visit_floating(logp.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* lp = logp.data<T>();
    T* g = c.output(0, logp.dtype(), logp.shape()).template data<T>();
    for (int64_t n = 0; n < wt.n; ++n)
      for (int64_t k = 0; k < wt.c; ++k)
        for (int64_t d = 0; d < wt.d; ++d) {
          const int64_t e = n * wt.d + d, i = (n * wt.c + k) * wt.d + d;
          const double p = std::exp(static_cast<double>(lp[i]));
          g[i] = static_cast<T>(s[e] * (p - (wt.target[e] == k ? 1.0 : 0.0)));
        }
  });
}

void infer_nll_grad(InferContext& c) {
  c.out(0).dtype = c.in(0).dtype;
  c.out(0).has_shape = true;
  c.out(0).dims.clear();
  for (int64_t v : shape_attr(c.node)) c.out(0).dims.push_back(ir::Dim{v, ""});
}

void run_nll_grad(KernelContext& c) {
  const Shape shape = shape_attr(c.node);
  const Reduction red = read_reduction(c.node);
  const Weighting wt = weigh(c.node, shape, c.in(1), c.has(2) ? c.inputs[2] : nullptr, red);
  const std::vector<double> s = element_scale(c.in(0), wt, red, c.node);
  visit_floating(c.in(0).dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor& out = c.output(0, c.in(0).dtype(), shape);
    T* g = out.template data<T>();
    std::fill(g, g + out.numel(), T(0));
    for (int64_t e = 0; e < wt.n * wt.d; ++e)
      if (wt.target[e] >= 0) g[((e / wt.d) * wt.c + wt.target[e]) * wt.d + e % wt.d] = static_cast<T>(-s[e]);
  });
}

std::string check_reduction(const ir::Node& n, int64_t) {
  const std::string r = n.attr_string("reduction", "mean");
  return r == "none" || r == "sum" || r == "mean" ? "" : "reduction '" + r + "'";
}

Cost loss_cost(const CostContext& c) { return nn::per_element_cost(c, 4); }

}  // namespace

extern const OpDef kOpNegativeLogLikelihoodLoss, kOpSoftmaxCrossEntropyLoss, kOpSoftmaxCrossEntropyLossGrad,
    kOpNegativeLogLikelihoodLossGrad;
const OpDef kOpNegativeLogLikelihoodLoss{"NegativeLogLikelihoodLoss", "", 2, 3, infer_loss, run_nll, loss_cost,
                                         check_reduction};
const OpDef kOpSoftmaxCrossEntropyLoss{"SoftmaxCrossEntropyLoss", "", 2, 3, infer_loss, run_sce, loss_cost,
                                       check_reduction};
const OpDef kOpSoftmaxCrossEntropyLossGrad{"SoftmaxCrossEntropyLossGrad", "joule", 3, 4, infer_sce_grad, run_sce_grad,
                                           loss_cost, check_reduction};
const OpDef kOpNegativeLogLikelihoodLossGrad{"NegativeLogLikelihoodLossGrad", "joule", 2, 3, infer_nll_grad,
                                             run_nll_grad, loss_cost, check_reduction};

}  // namespace joule::ops
