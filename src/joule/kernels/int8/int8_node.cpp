#include "joule/kernels/int8/int8_node.h"

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
  const ir::Node& n = v.node;
  const size_t ci = static_cast<size_t>(channels);
  p->x_type = v.in_types[0]->dtype;
  if (p->x_type != DType::UInt8 && p->x_type != DType::Int8) return "input codes are not uint8/int8";
  std::vector<double> xs, xzp{0}, ws, wzp{0}, ys, yzp{0};
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
  p->y_zero_point = static_cast<float>(yzp[0]);
  const float y_scale = requant ? static_cast<float>(ys[0]) : 1.f;
  const Tensor* bias = v.has(6) ? v.constant(6) : nullptr;
  if (v.has(6) && (!bias || bias->dtype() != DType::Float32 || bias->numel() != channels))
    return "bias is not a constant float32 vector";
  p->output_scale.assign(ci, 0.f);
  if (bias) p->bias_acc.assign(ci, 0.f);
  for (size_t k = 0; k < ci; ++k) {
    const float s = static_cast<float>(xs[0]) * static_cast<float>(ws[ws.size() > 1 ? k : 0]);
    if (!(s > 0)) return "a scale is not positive";
    p->output_scale[k] = s / y_scale;
    if (bias) p->bias_acc[k] = bias->data<float>()[k] / s;
  }
  p->act = n.attr_string("activation", "");
  const std::vector<float> ap = n.attr_floats("activation_params", {});
  if (p->act == "LeakyRelu" && ap.size() == 1) {
    p->alpha = ap[0];
  } else if (p->act == "Clip" && ap.size() == 2) {
    p->alpha = ap[0] / y_scale;
    p->beta = ap[1] / y_scale;
  } else if (!p->act.empty() && p->act != "Relu") {
    return "activation '" + p->act + "'";
  }
  return "";
}

}  // namespace joule::kernels
