// LayerNormalization (opset 17): normalises X over dims [axis, rank) and applies Scale and
// the optional bias B (both broadcast to those dims). Optional outputs Mean and InvStdDev
// have shape X[:axis] + [1]*(rank-axis) and the stash_type dtype (float32 by default).
#include <cmath>
#include <vector>

#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

DType stash_dtype(const ir::Node& n) {
  const int64_t st = n.attr_int("stash_type", 1);
  switch (st) {
    case 1:
      return DType::Float32;
    case 10:
      return DType::Float16;
    case 11:
      return DType::Float64;
    case 16:
      return DType::BFloat16;
    default:
      break;
  }
  fail(n.where() + ": unsupported stash_type " + std::to_string(st));
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  c.out(0) = x;
  ir::TensorType st;
  st.dtype = stash_dtype(c.node);
  if (x.has_shape) {
    const int64_t r = static_cast<int64_t>(x.dims.size());
    const int64_t axis = normalize_axis(c.node.attr_int("axis", -1), r, c.node);
    st.has_shape = true;
    st.dims = x.dims;
    for (int64_t d = axis; d < r; ++d) st.dims[static_cast<size_t>(d)] = ir::Dim{1, ""};
  }
  for (size_t i = 1; i < c.output_types.size() && i < 3; ++i) c.out(i) = st;
}

// A broadcastable parameter expanded to the `inner` normalised elements (as double).
std::vector<double> expand_param(const KernelContext& c, size_t i, const Shape& norm_shape,
                                 double def) {
  const int64_t inner = shape_numel(norm_shape);
  std::vector<double> r(static_cast<size_t>(inner), def);
  if (!c.has(i)) return r;
  const Tensor& p = *c.inputs[i];
  if (p.rank() > static_cast<int>(norm_shape.size()))
    fail(c.node.where() + ": input " + std::to_string(i) + " " + p.describe() +
         " has more dims than the normalised shape " + shape_str(norm_shape));
  if (broadcast_shapes({norm_shape, p.shape()}, c.node) != norm_shape)
    fail(c.node.where() + ": input " + std::to_string(i) + " " + p.describe() +
         " cannot be broadcast to " + shape_str(norm_shape));
  BroadcastIndexer ix(norm_shape, p.shape());
  for (int64_t j = 0; j < inner; ++j) r[static_cast<size_t>(j)] = p.value_as_double(ix.offset(j));
  return r;
}

template <class T>
void layer_norm(const Tensor& X, Tensor& Y, double* mean_out, double* inv_out, int64_t outer,
                int64_t inner, const std::vector<double>& scale, const std::vector<double>& bias,
                double eps, ThreadPool* pool) {
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const T* xp = x + o * inner;
      T* yp = y + o * inner;
      double s = 0;
      for (int64_t j = 0; j < inner; ++j) s += static_cast<double>(xp[j]);
      const double mean = s / static_cast<double>(inner);
      double v = 0;
      for (int64_t j = 0; j < inner; ++j) {
        const double d = static_cast<double>(xp[j]) - mean;
        v += d * d;
      }
      const double inv = 1.0 / std::sqrt(v / static_cast<double>(inner) + eps);
      for (int64_t j = 0; j < inner; ++j)
        yp[j] = static_cast<T>((static_cast<double>(xp[j]) - mean) * inv *
                                   scale[static_cast<size_t>(j)] +
                               bias[static_cast<size_t>(j)]);
      mean_out[o] = mean;
      inv_out[o] = inv;
    }
  };
  parallel_or_serial(pool, outer, body);
}

void run(KernelContext& c) {
  const Tensor& X0 = c.in(0);
  // Half types are normalised in float32 (statistics are kept in double anyway).
  const Tensor X = is_half(X0.dtype()) ? X0.cast(DType::Float32) : X0;
  c.in(1);  // Scale is required
  const int64_t r = X.rank();
  const int64_t axis = normalize_axis(c.node.attr_int("axis", -1), r, c.node);
  const Shape norm_shape(X.shape().begin() + axis, X.shape().end());
  const int64_t inner = shape_numel(norm_shape);
  const int64_t outer = inner == 0 ? 0 : X.numel() / inner;
  const std::vector<double> scale = expand_param(c, 1, norm_shape, 1.0);
  const std::vector<double> bias = expand_param(c, 2, norm_shape, 0.0);
  const double eps = c.node.attr_float("epsilon", 1e-5f);
  Tensor Y(X.dtype(), X.shape());
  std::vector<double> mean(static_cast<size_t>(outer)), inv(static_cast<size_t>(outer));
  // Statistics in double (the oracle); the fast float32 kernel is the layer_norm class's
  // simd algorithm (kernels/eltwise/norm.cpp).
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    layer_norm<T>(X, Y, mean.data(), inv.data(), outer, inner, scale, bias, eps, c.pool);
  });
  c.outputs[0] = X0.dtype() == X.dtype() ? Y : Y.cast(X0.dtype());
  Shape st_shape = X.shape();
  for (int64_t d = axis; d < r; ++d) st_shape[static_cast<size_t>(d)] = 1;
  const DType st = stash_dtype(c.node);
  for (size_t i = 1; i < c.outputs.size() && i < 3; ++i) {
    if (c.node.outputs[i].empty()) continue;
    Tensor t(DType::Float64, st_shape);
    const std::vector<double>& src = i == 1 ? mean : inv;
    std::copy(src.begin(), src.end(), t.data<double>());
    c.outputs[i] = t.cast(st);
  }
}

Cost cost(const CostContext& c) {
  Cost r;
  // mean, variance (sub, mul, add), normalise (sub, mul), scale and bias: ~8 flops/element
  if (!c.in.empty()) r.flops = 8 * nn::numel_d(c.in[0]);
  r.bytes = io_bytes(c);
  return r;
}

}  // namespace

extern const OpDef kOpLayerNormalization;
const OpDef kOpLayerNormalization{"LayerNormalization", "", 2, 3, infer, run, cost};
// The same op in joule's domain: what fuse_layer_norm emits for models below opset 17.
extern const OpDef kOpJouleLayerNormalization;
const OpDef kOpJouleLayerNormalization{"LayerNormalization", "joule", 2, 3, infer, run, cost};

}  // namespace joule::ops
