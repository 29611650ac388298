// The gradients of a convolution on oneDNN's backward primitives (op classes conv_grad_data
// and conv_grad_weight, algorithm `onednn`): joule.ConvGradData on convolution_backward_data,
// joule.ConvGradWeight on convolution_backward_weights (with the bias gradient when asked).
// Every operand comes at run time in N,C,H,W (weights O,I,H,W): each is reordered to and from the
// layouts the primitive picks (format_tag::any), in scratch made once here.
#include <dnnl.hpp>

#include "joule/core/error.h"
#include "joule/kernels/conv/conv_node.h"
#include "joule/kernels/conv/onednn.h"

namespace joule::kernels {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

memory::desc any(const memory::dims& dims) { return memory::desc(dims, dt::f32, tag::any); }
memory::desc plain(const memory::dims& dims) { return memory::desc(dims, dt::f32, tag::nchw); }

// The forward primitive the backward ones are hinted with.
dnnl::convolution_forward::primitive_desc forward_hint(const OnednnConvDims& d, bool bias) {
  const dnnl::convolution_forward::desc f(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                          any(d.src), any(d.w), bias ? memory::desc({d.dst[1]}, dt::f32, tag::x) : memory::desc(),
                                          any(d.dst), d.strides, d.dil, d.pad_l, d.pad_r);
  return dnnl::convolution_forward::primitive_desc(f, onednn_engine());
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

class GradDataKernel : public Kernel {
 public:
  GradDataKernel(const ConvShape& s, int threads) : s_(s), stream_(onednn_engine()) {
    onednn_set_threads(threads);
    const OnednnConvDims d = onednn_conv_dims(s);
    const dnnl::convolution_backward_data::desc bd(dnnl::algorithm::convolution_direct, any(d.src), any(d.w),
                                                   any(d.dst), d.strides, d.dil, d.pad_l, d.pad_r);
    pd_ = dnnl::convolution_backward_data::primitive_desc(bd, user_scratchpad(), onednn_engine(), forward_hint(d, false));
    prim_ = dnnl::convolution_backward_data(pd_);
    dy_ = OnednnOperand(plain(d.dst), pd_.diff_dst_desc());
    w_ = OnednnOperand(memory::desc(d.w, dt::f32, d.w_tag()), pd_.weights_desc());
    dx_ = OnednnOperand(plain(d.src), pd_.diff_src_desc());
    scratch_ = memory(pd_.scratchpad_desc(), onednn_engine());
  }

  void run(ops::KernelContext& c) const override {
    const Tensor& dY = c.in(0);
    const Tensor& W = c.in(1);
    if (dY.numel() != s_.n * s_.m * s_.oh * s_.ow || W.numel() != s_.m * s_.cg() * s_.kh * s_.kw ||
        dY.dtype() != DType::Float32 || W.dtype() != DType::Float32)
      fail(c.node.where() + ": dY " + dY.describe() + " or W " + W.describe() + " differs from the plan");
    Shape xs = c.node.attr_ints("input_shape");
    Tensor& dX = c.output(0, DType::Float32, xs);
    onednn_set_threads(c.pool->threads());
    dy_.read(dY.data<float>(), stream_);
    w_.read(W.data<float>(), stream_);
    dx_.bind(dX.data<float>());
    prim_.execute(stream_, {{DNNL_ARG_DIFF_DST, dy_.arg()}, {DNNL_ARG_WEIGHTS, w_.arg()},
                            {DNNL_ARG_DIFF_SRC, dx_.arg()}, {DNNL_ARG_SCRATCHPAD, scratch_}});
    dx_.finish(stream_);
    stream_.wait();
  }
  std::string detail() const override { return pd_.impl_info_str(); }

 private:
  ConvShape s_;
  mutable dnnl::stream stream_;
  dnnl::convolution_backward_data::primitive_desc pd_;
  dnnl::convolution_backward_data prim_;
  mutable OnednnOperand dy_, w_, dx_;
  memory scratch_;
};

class GradWeightKernel : public Kernel {
 public:
  GradWeightKernel(const ConvShape& s, bool bias, int threads) : s_(s), bias_(bias), stream_(onednn_engine()) {
    onednn_set_threads(threads);
    const OnednnConvDims d = onednn_conv_dims(s);
    const memory::desc bmd = bias ? memory::desc({s.m}, dt::f32, tag::x) : memory::desc();
    const dnnl::convolution_backward_weights::desc bd(dnnl::algorithm::convolution_direct, any(d.src), any(d.w), bmd,
                                                      any(d.dst), d.strides, d.dil, d.pad_l, d.pad_r);
    pd_ = dnnl::convolution_backward_weights::primitive_desc(bd, user_scratchpad(), onednn_engine(), forward_hint(d, bias));
    prim_ = dnnl::convolution_backward_weights(pd_);
    x_ = OnednnOperand(plain(d.src), pd_.src_desc());
    dy_ = OnednnOperand(plain(d.dst), pd_.diff_dst_desc());
    dw_ = OnednnOperand(memory::desc(d.w, dt::f32, d.w_tag()), pd_.diff_weights_desc());
    if (bias) db_ = OnednnOperand(memory::desc({s.m}, dt::f32, tag::x), pd_.diff_bias_desc());
    scratch_ = memory(pd_.scratchpad_desc(), onednn_engine());
  }

  void run(ops::KernelContext& c) const override {
    const Tensor& X = c.in(0);
    const Tensor& dY = c.in(1);
    if (X.numel() != s_.n * s_.c * s_.h * s_.w || dY.numel() != s_.n * s_.m * s_.oh * s_.ow ||
        X.dtype() != DType::Float32 || dY.dtype() != DType::Float32)
      fail(c.node.where() + ": X " + X.describe() + " or dY " + dY.describe() + " differs from the plan");
    Tensor& dW = c.output(0, DType::Float32, c.node.attr_ints("weight_shape"));
    onednn_set_threads(c.pool->threads());
    x_.read(X.data<float>(), stream_);
    dy_.read(dY.data<float>(), stream_);
    dw_.bind(dW.data<float>());
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, x_.arg()}, {DNNL_ARG_DIFF_DST, dy_.arg()},
                                            {DNNL_ARG_DIFF_WEIGHTS, dw_.arg()}, {DNNL_ARG_SCRATCHPAD, scratch_}};
    if (bias_) {
      db_.bind(c.output(1, DType::Float32, {s_.m}).data<float>());
      args[DNNL_ARG_DIFF_BIAS] = db_.arg();
    }
    prim_.execute(stream_, args);
    dw_.finish(stream_);
    if (bias_) db_.finish(stream_);
    stream_.wait();
  }
  std::string detail() const override { return pd_.impl_info_str(); }

 private:
  ConvShape s_;
  bool bias_;
  mutable dnnl::stream stream_;
  dnnl::convolution_backward_weights::primitive_desc pd_;
  dnnl::convolution_backward_weights prim_;
  mutable OnednnOperand x_, dy_, dw_, db_;
  memory scratch_;
};

// The forward convolution a gradient node belongs to, from its static shapes and attributes.
std::string read_grad(const NodeView& v, bool data, ConvShape* s) {
  Shape a, b;
  if (!v.static_shape(0, &a) || !v.static_shape(1, &b)) return "shapes are not static";
  if (v.in_types[0]->dtype != DType::Float32 || v.in_types[1]->dtype != DType::Float32) return "not float32";
  const char* attr = data ? "input_shape" : "weight_shape";
  if (!v.node.has_attr(attr)) return std::string("no ") + attr;
  const Shape given = v.node.attr_ints(attr);
  // data: (dY, W) and the input shape; weight: (X, dY) and the weight shape.
  const Shape& xs = data ? given : a;
  const Shape& ws = data ? b : given;
  const Shape& ys = data ? a : b;
  if (xs.size() != 3 && xs.size() != 4) return std::to_string(xs.size() - 2) + "-D convolution (1-D and 2-D only)";
  if (ws.size() != xs.size() || ys.size() != xs.size()) return "ranks differ";
  try {
    return read_conv_shape(v.node, xs, ws, ys, s);
  } catch (const Error& e) {
    return e.what();
  }
}

double estimate(const NodeView& v, bool data) {
  ConvShape s;
  read_grad(v, data, &s);
  // About the forward convolution's rate on blocked layouts, plus the reorders of every operand.
  const double bytes = 4.0 * (s.n * s.c * s.h * s.w + s.n * s.m * s.oh * s.ow);
  return 2.0 * s.macs() / (100e9 * v.threads) * 1e3 + 2 * bytes / 20e9 * 1e3 + 0.005;
}

std::string data_supports(const NodeView& v) {
  ConvShape s;
  return read_grad(v, true, &s);
}
double data_estimate(const NodeView& v) { return estimate(v, true); }
std::unique_ptr<Kernel> data_prepare(const NodeView& v) {
  ConvShape s;
  read_grad(v, true, &s);
  return make_onednn_kernel<GradDataKernel>("", "backward-data convolution " + s.str(), s, v.threads);
}

std::string weight_supports(const NodeView& v) {
  ConvShape s;
  return read_grad(v, false, &s);
}
double weight_estimate(const NodeView& v) { return estimate(v, false); }
std::unique_ptr<Kernel> weight_prepare(const NodeView& v) {
  ConvShape s;
  read_grad(v, false, &s);
  const bool bias = v.node.outputs.size() > 1 && !v.node.outputs[1].empty();
  return make_onednn_kernel<GradWeightKernel>("", "backward-weights convolution " + s.str(), s, bias, v.threads);
}

}  // namespace

extern const Algorithm kConvGradDataOnednn, kConvGradWeightOnednn;
const Algorithm kConvGradDataOnednn{"conv_grad_data", "onednn", "oneDNN convolution_backward_data (blocked layouts)",
                                    data_supports, data_estimate, data_prepare};
const Algorithm kConvGradWeightOnednn{"conv_grad_weight", "onednn",
                                      "oneDNN convolution_backward_weights (blocked layouts, bias gradient)",
                                      weight_supports, weight_estimate, weight_prepare};

}  // namespace joule::kernels
