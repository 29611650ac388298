// joule.FakeQuantGrad(dY, X, scale?, zero_point?) -> dX (, dScale): the gradient of FakeQuant
// (same format attributes) for quantization-aware training, by its attribute `qat`:
//   ste   straight-through inside the format's range, zero where the value was clipped
//   lsq   (Esser et al., learned step size) dX as ste; dScale = g * sum dY * t, where t is
//         round(x/s) - x/s inside the range and qmin - z / qmax - z where clipped below / above,
//         g = 1 / sqrt(n * qmax) with n the values sharing the scale
//   pact  (Choi et al., learned clipping) dX as ste; dScale = sum dY * (qmin - z | qmax - z) over
//         the clipped values only (the clip points move with the scale)
//   tqt   (Jain et al., trained thresholds) dX as ste; dScale as lsq without g (the scale is a
//         power of two of a trained log2 threshold, joule.Pow2Ceil, whose gradient adds s ln 2)
// Integer formats; every other format passes the gradient straight through (no scale gradient).
#include <cmath>

#include "joule/ops/util.h"
#include "joule/quant/format_attrs.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  c.out(0) = c.in(1);
  if (c.output_types.size() > 1) c.out(1) = c.has(2) ? c.in(2) : ir::TensorType::of(DType::Float32, {});
}

void run(KernelContext& c) {
  const Tensor& dY = c.in(0);
  const Tensor& X = c.in(1);
  if (dY.shape() != X.shape() || X.dtype() != DType::Float32 || dY.dtype() != DType::Float32)
    fail(c.node.where() + ": dY " + dY.describe() + " and X " + X.describe() + " must be float32 of one shape");
  const quant::Format f = quant::format_from_attrs(c.node);
  const std::string method = c.node.attr_string("qat", "ste");
  if (method != "ste" && method != "lsq" && method != "pact" && method != "tqt")
    fail(c.node.where() + ": qat '" + method + "' (ste, lsq, pact, tqt)");
  const float* dy = dY.data<float>();
  const float* x = X.data<float>();
  float* dx = c.output(0, DType::Float32, X.shape()).data<float>();
  const bool want_ds = c.outputs.size() > 1 && !c.node.outputs[1].empty();
  if (f.kind != quant::FormatKind::Int || !c.has(2)) {
    std::copy(dy, dy + X.numel(), dx);
    if (want_ds) {
      Tensor& ds = c.output(1, DType::Float32, c.has(2) ? c.in(2).shape() : Shape{});
      std::fill(ds.data<float>(), ds.data<float>() + ds.numel(), 0.f);
    }
    return;
  }
  const Tensor& S = c.in(2);
  const int64_t nc = S.numel();
  // Channel of element i: (i / inner) % channels along the axis (per-tensor: 0).
  int64_t inner = X.numel(), channels = 1;
  if (nc > 1) {
    const int64_t axis = normalize_axis(c.node.attr_int("axis", 0), X.rank(), c.node);
    channels = X.dim(static_cast<int>(axis));
    if (channels != nc) fail(c.node.where() + ": " + std::to_string(nc) + " scales for " + X.describe());
    inner = 1;
    for (int64_t d = axis + 1; d < X.rank(); ++d) inner *= X.dim(static_cast<int>(d));
  }
  std::vector<double> s(static_cast<size_t>(nc)), z(static_cast<size_t>(nc), 0.0), acc(static_cast<size_t>(nc), 0.0);
  for (int64_t k = 0; k < nc; ++k) {
    s[k] = S.value_as_double(k);
    if (c.has(3)) z[k] = static_cast<double>(c.in(3).value_as_int(k));
  }
  const double qmin = static_cast<double>(f.qmin()), qmax = static_cast<double>(f.qmax());
  for (int64_t i = 0; i < X.numel(); ++i) {
    const size_t k = nc > 1 ? static_cast<size_t>((i / inner) % channels) : 0;
    const double v = static_cast<double>(x[i]) / s[k], r = std::nearbyint(v) + z[k];
    double t;
    if (r < qmin) {
      dx[i] = 0.f;
      t = qmin - z[k];
    } else if (r > qmax) {
      dx[i] = 0.f;
      t = qmax - z[k];
    } else {
      dx[i] = dy[i];
      t = method == "lsq" || method == "tqt" ? std::nearbyint(v) - v : 0.0;
    }
    acc[k] += static_cast<double>(dy[i]) * t;
  }
  if (!want_ds) return;
  Tensor& ds = c.output(1, S.dtype(), S.shape());
  const double per_scale = static_cast<double>(X.numel()) / static_cast<double>(nc);
  const double g = method == "lsq" ? 1.0 / std::sqrt(per_scale * std::max(qmax, 1.0)) : 1.0;
  for (int64_t k = 0; k < nc; ++k) {
    const double v = method == "ste" ? 0.0 : acc[k] * g;
    if (S.dtype() == DType::Float32) ds.data<float>()[k] = static_cast<float>(v);
    else ds.data<double>()[k] = v;
  }
}

}  // namespace

extern const OpDef kOpFakeQuantGrad;
const OpDef kOpFakeQuantGrad{"FakeQuantGrad", "joule", 2, 4, infer, run};

}  // namespace joule::ops
