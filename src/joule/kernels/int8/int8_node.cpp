#include "joule/kernels/int8/int8_node.h"

#include <algorithm>
#include <cstdlib>

#include "joule/core/cpu_features.h"
#include "joule/kernels/conv/conv_node.h"

namespace joule::kernels {

namespace {

// A constant per-tensor or per-channel parameter as floats (size 1 or channels).
bool read_param(const NodeView& v, size_t i, int64_t channels, std::vector<double>* out) {
  const Tensor* t = v.has(i) ? v.constant(i) : nullptr;
  if (!t || (t->numel() != 1 && t->numel() != channels)) return false;
  out->clear();
  for (int64_t k = 0; k < t->numel(); ++k) out->push_back(t->value_as_double(k));
  return true;
}

}  // namespace

std::string read_int8_params(const NodeView& v, int64_t channels, Int8Params* p) {
  p->x_type = v.in_types[0]->dtype;
  if (p->x_type != DType::UInt8 && p->x_type != DType::Int8) return "input codes are not uint8/int8";
  std::vector<double> xs, xzp{0}, ws, wzp{0}, ys{1}, yzp{0};
  if (!read_param(v, 1, 1, &xs)) return "x_scale is not a constant scalar";
  if (v.has(2) && !read_param(v, 2, 1, &xzp)) return "x_zero_point is not a constant scalar";
  p->w = v.constant(3);
  if (!p->w || p->w->dtype() != DType::Int8) return "weight is not a constant int8 tensor";
  if (!read_param(v, 4, channels, &ws)) return "w_scale is not a constant scalar or per-channel vector";
  if (v.has(5) && !read_param(v, 5, channels, &wzp)) return "w_zero_point is not constant";
  for (double z : wzp)
    if (z != 0) return "weight zero point is not 0";
  const bool requant = v.has(7);
  if (requant && !read_param(v, 7, 1, &ys)) return "y_scale is not a constant scalar";
  if (v.has(8) && !read_param(v, 8, 1, &yzp)) return "y_zero_point is not a constant scalar";
  p->y_type = !requant ? DType::Float32 : v.has(8) ? v.in_types[8]->dtype : DType::UInt8;
  if (p->y_type != DType::Float32 && p->y_type != DType::UInt8 && p->y_type != DType::Int8)
    return "output type is not float32/uint8/int8";
  p->x_zero_point = static_cast<int32_t>(xzp[0]);
  const Tensor* bias = v.has(6) ? v.constant(6) : nullptr;
  if (v.has(6) && (!bias || bias->dtype() != DType::Float32 || bias->numel() != channels))
    return "bias is not a constant float32 vector";
  const ops::qint::Activation act(v.node);
  return ops::qint::Requant::make(xs[0], ws, bias ? bias->data<float>() : nullptr, channels, requant, ys[0], yzp[0],
                                  p->y_type, act.kind, act.p, &p->rq);
}

std::string saturating_pairs_reason(const Int8Params& p) {
  if (p.x_type != DType::UInt8) return "int8 inputs (the pairs multiply unsigned codes)";
  int wmax = 0;
  const int8_t* w = p.w->data<int8_t>();
  for (int64_t i = 0; i < p.w->numel(); ++i) wmax = std::max(wmax, std::abs(static_cast<int>(w[i])));
  if (wmax <= 64) return "";
  return "weight codes reach " + std::to_string(wmax) + ", beyond +-64 (7-bit weights, as examples/quant/w7a8.yaml "
         "makes, run exactly)";
}

std::string onednn_int8_inexact_reason(const Int8Params& p) {
  const std::string cpu = int8_inexact_reason();
  if (cpu.empty()) return "";
  const std::string why = saturating_pairs_reason(p);
  if (why.empty()) return "";
  return cpu + " (this node: " + why + ")";
}

std::vector<float> bias_or_zeros(const ops::qint::Requant& r) {
  return r.bias_acc.empty() ? std::vector<float>(r.scale.size(), 0.f) : r.bias_acc;
}

std::string read_qconv_problem(const NodeView& v, QConvProblem* p) {
  Shape ws;
  if (!v.static_shape(0, &p->x_shape) || !v.static_shape(3, &ws) || !v.out_types[0] || !v.out_types[0]->is_static())
    return "shapes are not static";
  p->y_shape = v.out_types[0]->static_shape();
  p->channels_last = v.node.attr_int("channels_last", 0) != 0;
  Shape xs = p->x_shape;
  if (p->channels_last) {
    if (xs.size() != 4) return "channels_last needs a rank-4 input";
    xs = {xs[0], xs[3], xs[1], xs[2]};
  }
  if (xs.size() != 3 && xs.size() != 4) return "only 1-D and 2-D convolutions";
  if (std::string r = read_int8_params(v, ws[0], &p->q); !r.empty()) return r;
  return read_conv_shape(v.node, xs, ws, p->y_shape, &p->s);
}

std::string read_qmatmul_problem(const NodeView& v, QMatMulProblem* p) {
  Shape ws;
  if (!v.static_shape(0, &p->a_shape) || !v.static_shape(3, &ws) || !v.out_types[0] || !v.out_types[0]->is_static())
    return "shapes are not static";
  if (ws.size() != 2 || p->a_shape.empty()) return "B is not 2-D or A is a scalar";
  p->y_shape = v.out_types[0]->static_shape();
  p->K = ws[0];
  p->N = ws[1];
  if (p->a_shape.back() != p->K) return "inner dimensions differ";
  p->M = shape_numel(p->a_shape) / std::max<int64_t>(1, p->K);
  if (p->M * p->N != shape_numel(p->y_shape)) return "output shape does not match";
  return read_int8_params(v, p->N, &p->q);
}

void check_int8_input(const ops::KernelContext& k, const Int8Params& q, const Shape& planned) {
  const Tensor& X = k.in(0);
  if (X.dtype() != q.x_type || X.shape() != planned)
    fail(k.node.where() + ": input " + X.describe() + " differs from the planned " + dtype_name(q.x_type) +
         shape_str(planned));
}

}  // namespace joule::kernels
