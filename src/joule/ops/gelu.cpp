// Gelu (ONNX opset 20; also domain "joule", where the fuse_gelu pass puts it for older
// opsets): y = 0.5 x (1 + erf(x / sqrt 2)), or with approximate="tanh"
// y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Float32 runs the vectorised forms of
// ops/vec_math.h (within 2e-6 relative of libm where |y| > 4e-3, 1e-6 absolute elsewhere);
// float64 uses libm; halves go through float32.
#include <cmath>

#include "joule/core/cpu_features.h"
#include "joule/ops/nn_util.h"
#include "joule/ops/vec_math.h"

namespace joule::ops {
namespace {

bool tanh_approx(const ir::Node& n) { return n.attr_string("approximate", "none") == "tanh"; }

std::string check(const ir::Node& n, int64_t) {
  const std::string a = n.attr_string("approximate", "none");
  return a == "none" || a == "tanh" ? "" : "approximate '" + a + "'";
}

void infer(InferContext& c) { c.out(0) = c.in(0); }

template <bool Tanh>
JOULE_ALWAYS_INLINE void gelu_span_body(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Tanh ? vec::gelu_tanh(x[i]) : vec::gelu_erf(x[i]);
}
template <bool Tanh>
void gelu_span(const float* x, float* y, int64_t n) {
  gelu_span_body<Tanh>(x, y, n);
}
template <bool Tanh>
JOULE_AVX512 void gelu_span_avx512(const float* x, float* y, int64_t n) {
  gelu_span_body<Tanh>(x, y, n);
}

void gelu_float(const float* x, float* y, int64_t numel, bool approx, ThreadPool* pool) {
  const bool avx512 = cpu_features().avx512;
  parallel_or_serial(pool, numel, [&](int64_t b, int64_t e) {
    if (avx512) (approx ? gelu_span_avx512<true> : gelu_span_avx512<false>)(x + b, y + b, e - b);
    else (approx ? gelu_span<true> : gelu_span<false>)(x + b, y + b, e - b);
  });
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  const Tensor& X = c.in(0);
  Tensor Y(X.dtype(), X.shape());
  const bool approx = tanh_approx(c.node);
  if (X.dtype() == DType::Float32) {
    gelu_float(X.data<float>(), Y.data<float>(), X.numel(), approx, c.pool);
    c.outputs[0] = Y;
    return;
  }
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
