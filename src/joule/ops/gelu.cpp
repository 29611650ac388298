// Gelu (ONNX opset 20; also domain "joule", where the fuse_gelu pass puts it for older
// opsets): y = 0.5 x (1 + erf(x / sqrt 2)), or with approximate="tanh"
// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Float32/float64 (halves via float32).
#include <cmath>

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

bool tanh_approx(const ir::Node& n) { return n.attr_string("approximate", "none") == "tanh"; }

std::string check(const ir::Node& n, int64_t) {
  const std::string a = n.attr_string("approximate", "none");
  return a == "none" || a == "tanh" ? "" : "approximate '" + a + "'";
}

void infer(InferContext& c) { c.out(0) = c.in(0); }

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  const Tensor& X = c.in(0);
  Tensor Y(X.dtype(), X.shape());
  const bool approx = tanh_approx(c.node);
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    T* y = Y.data<T>();
    auto body = [&](int64_t b, int64_t e) {
      if (approx) {
        const T k = static_cast<T>(0.7978845608028654);  // sqrt(2/pi)
        for (int64_t i = b; i < e; ++i)
          y[i] = T(0.5) * x[i] * (T(1) + std::tanh(k * (x[i] + T(0.044715) * x[i] * x[i] * x[i])));
      } else {
        const T r = static_cast<T>(0.7071067811865476);  // 1/sqrt(2)
        for (int64_t i = b; i < e; ++i) y[i] = T(0.5) * x[i] * (T(1) + std::erf(x[i] * r));
      }
    };
    parallel_or_serial(c.pool, X.numel(), body);
  });
  c.outputs[0] = Y;
}

Cost cost(const CostContext& c) { return nn::per_element_cost(c, 8); }

}  // namespace

extern const OpDef kOpGelu;
const OpDef kOpGelu{"Gelu", "", 1, 1, infer, run, cost, check};
extern const OpDef kOpJouleGelu;
const OpDef kOpJouleGelu{"Gelu", "joule", 1, 1, infer, run, cost, check};

}  // namespace joule::ops
