#include "joule/kernels/int8/onednn_int8.h"

#include <cstring>

#include "joule/kernels/conv/onednn.h"

namespace joule::kernels {

using dnnl::memory;

memory::data_type onednn_code_type(DType t) {
  return t == DType::UInt8 ? memory::data_type::u8 : t == DType::Int8 ? memory::data_type::s8 : memory::data_type::f32;
}

dnnl::primitive_attr onednn_int8_attr(const Int8Params& q) {
  dnnl::primitive_attr attr;
  const ops::qint::Requant& r = q.rq;
  bool per_channel = false;
  for (float x : r.scale) per_channel = per_channel || x != r.scale[0];
  // Output channels are dst dimension 1 for both the convolution (N,C,H,W) and the matmul (M,N).
  attr.set_output_scales(per_channel ? 1 << 1 : 0, per_channel ? r.scale : std::vector<float>{r.scale[0]});
  if (q.x_zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  dnnl::post_ops po;
  if (r.act == 1) po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  if (r.act == 2) po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, r.alpha, 0.f);
  if (r.act == 3) po.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, r.alpha, r.beta);
  if (r.act == 4) po.append_eltwise(1.f, dnnl::algorithm::eltwise_swish, 1.f, 0.f);
  if (r.act == 5) po.append_eltwise(1.f, dnnl::algorithm::eltwise_hardswish, 1.f / 6.f, 0.5f);
  if (r.zero_point != 0 || r.post != 1.f)
    po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, r.post, r.zero_point);
  attr.set_post_ops(po);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void onednn_bind_int8_args(const Int8Params& q, const memory::desc& bias_md, std::unordered_map<int, memory>& args) {
  if (!q.rq.bias_acc.empty()) {
    memory bias(bias_md, onednn_engine());
    std::memcpy(bias.get_data_handle(), q.rq.bias_acc.data(), sizeof(float) * q.rq.bias_acc.size());
    args[DNNL_ARG_BIAS] = bias;
  }
  if (q.x_zero_point != 0) {
    memory zp({{1}, memory::data_type::s32, memory::format_tag::x}, onednn_engine());
    *static_cast<int32_t*>(zp.get_data_handle()) = q.x_zero_point;
    args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] = zp;
  }
}

}  // namespace joule::kernels
