// BatchNormalization: Y = (X - mean) / sqrt(var + epsilon) * scale + B per channel (dim 1);
// with training_mode=1 (opset 14+) the batch's statistics, and the running ones updated as
// outputs 1 and 2 (ONNX: old * momentum + batch * (1 - momentum), variance biased). The extra
// statistics outputs of the opsets before 14 are not supported.
#include <cmath>

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

std::string check(const ir::Node& n, int64_t opset) {
  const bool training = n.attr_int("training_mode", 0) != 0;
  if (training && opset < 14) return "training_mode before opset 14";
  for (size_t i = training ? 3 : 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty())
      return "output " + std::to_string(i) +
             (training ? " (opset 14 and later have three outputs)" : " (running statistics are only produced in training mode)");
  if (opset < 9 && n.attr_int("spatial", 1) == 0) return "spatial=0";
  return "";
}

void check_or_fail(const ir::Node& n, int64_t opset) {
  const std::string why = check(n, opset);
  if (!why.empty()) fail_unsupported(n.where() + ": " + why);
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (x.has_shape && x.dims.size() < 2)
    fail(c.node.where() + ": input rank must be >= 2, got " + x.str());
  for (size_t i = 1; i < 5; ++i) {
    const ir::TensorType& p = c.in(i);
    if (!p.has_shape) continue;
    if (p.dims.size() != 1) fail(c.node.where() + ": input " + std::to_string(i) + " must be 1-D");
    if (x.has_shape && x.dims[1].is_static() && p.dims[0].is_static() &&
        p.dims[0].value != x.dims[1].value)
      fail(c.node.where() + ": input " + std::to_string(i) + " has " +
           std::to_string(p.dims[0].value) + " elements for " + std::to_string(x.dims[1].value) +
           " channels");
  }
  c.out(0) = x;
  // Training-mode statistics (the kernel rejects them; typed here for graph inference).
  // All of them are [C] vectors with the dtype of input_mean.
  for (size_t i = 1; i < c.output_types.size(); ++i) c.out(i) = c.in(3);
}

template <class T>
void bn_kernel(const Tensor& X, const std::vector<double>& a, const std::vector<double>& b,
               Tensor& Y, ThreadPool* pool) {
  const int64_t N = X.dim(0), C = X.dim(1);
  const int64_t plane = C == 0 || N == 0 ? 0 : X.numel() / (N * C);
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const size_t ch = static_cast<size_t>(t % C);
      const T sa = static_cast<T>(a[ch]), sb = static_cast<T>(b[ch]);
      const T* xp = x + t * plane;
      T* yp = y + t * plane;
      for (int64_t i = 0; i < plane; ++i) yp[i] = xp[i] * sa + sb;
    }
  };
  parallel_or_serial(pool, N * C, body);
}

void run(KernelContext& c) {
  check_or_fail(c.node, c.opset);
  if (run_half_as_float(c, run)) return;
  if (c.node.attr_int("training_mode", 0) != 0) {  // ONNX: momentum is the share of the old value
    nn::batch_norm_training(c, 1.0 - c.node.attr_float("momentum", 0.9f), false);
    return;
  }
  const Tensor& X = c.in(0);
  if (X.rank() < 2) fail(c.node.where() + ": input rank must be >= 2, got " + X.describe());
  const int64_t C = X.dim(1);
  for (size_t i = 1; i < 5; ++i) {
    const Tensor& p = c.in(i);
    if (p.rank() != 1 || p.dim(0) != C)
      fail(c.node.where() + ": input " + std::to_string(i) + " " + p.describe() +
           " does not match " + std::to_string(C) + " channels");
  }
  const double eps = c.node.attr_float("epsilon", 1e-5f);
  std::vector<double> a(static_cast<size_t>(C)), b(static_cast<size_t>(C));
  for (int64_t ch = 0; ch < C; ++ch) {
    const double scale = c.in(1).value_as_double(ch), bias = c.in(2).value_as_double(ch);
    const double mean = c.in(3).value_as_double(ch), var = c.in(4).value_as_double(ch);
    const double s = scale / std::sqrt(var + eps);
    a[static_cast<size_t>(ch)] = s;
    b[static_cast<size_t>(ch)] = bias - mean * s;
  }
  Tensor Y(X.dtype(), X.shape());
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    bn_kernel<T>(X, a, b, Y, c.pool);
  });
  c.outputs[0] = Y;
}

Cost cost(const CostContext& c) { return nn::per_element_cost(c, 2); }

}  // namespace

extern const OpDef kOpBatchNormalization;
const OpDef kOpBatchNormalization{"BatchNormalization", "", 5, 5, infer, run, cost, check};

}  // namespace joule::ops
