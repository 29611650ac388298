#include "joule/kernels/conv/onednn.h"

#include <omp.h>

#include <cstring>
#include <dnnl.hpp>

#include <algorithm>

#include "joule/core/error.h"
#include "joule/kernels/gemm/matmul_epilogue.h"

namespace joule::kernels {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

class OnednnConv : public ConvKernel {
 public:
  OnednnConv(const ConvShape& s, const float* weight, const float* bias, bool has_bias, const Epilogue& ep,
             bool channels_last, bool bf16, int threads)
      : s_(s), ep_(ep), stream_(onednn_engine()) {
    // oneDNN sizes a primitive's work split (and so its OpenMP team) when it is created.
    onednn_set_threads(threads);
    const auto& eng = onednn_engine();
    const OnednnConvDims d = onednn_conv_dims(s);
    const tag user_tag = channels_last ? tag::nhwc : tag::nchw;
    // N,H,W,C is also the primitive's layout; on N,C,H,W it chooses its own. Strided convs of
    // many channels (>= 256) in thin groups (<= 16 per group) are the exception: oneDNN 2.6's
    // N,H,W,C kernel for them ran 1.1-2.1x slower than its blocked one with both reorders
    // included (1 thread: ResNeXt's 256/32 at 56x56 and 512/32 at 28x28, 256/16 at 28x28);
    // for fewer channels or wider groups (RegNet's 32/2 .. 400/25, 1024/32) N,H,W,C was as fast
    // or faster. So those compute blocked and reorder.
    const bool strided_grouped = s.group > 1 && !s.depthwise() && s.c >= 256 && s.cg() <= 16 &&
                                 (s.stride_h > 1 || s.stride_w > 1);
    const tag act_tag = channels_last && !strided_grouped ? tag::nhwc : tag::any;
    const memory::desc bias_md = has_bias ? memory::desc({s.m}, dt::f32, tag::x) : memory::desc();
    // bf16: source and weights in bfloat16 (the source converted at every run, the weights
    // once), products summed in float32, bias, post-ops and the output in float32.
    const dt in_dt = bf16 ? dt::bf16 : dt::f32;
    dnnl::convolution_forward::desc cd(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                       memory::desc(d.src, in_dt, act_tag), memory::desc(d.w, in_dt, tag::any),
                                       bias_md, memory::desc(d.dst, dt::f32, act_tag), d.strides, d.dil, d.pad_l,
                                       d.pad_r);
    dnnl::post_ops po;
    if (ep.residual) po.append_sum(1.f);
    // oneDNN 2.6's ReLU and Clip post-ops turn NaN into the bound: joule's own pass after the
    // primitive applies them (see onednn.h).
    switch (ep.act) {
      case Activation::kNone: break;
      case Activation::kRelu: after_.act = MatMulAct::kRelu; break;
      case Activation::kLeakyRelu: po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, ep.alpha, 0.f); break;
      case Activation::kClip: after_ = {MatMulAct::kClip, ep.alpha, ep.beta}; break;
      // oneDNN 2.6's logistic and swish post-ops cost ~0.38 ns per value here, the pass after the
      // primitive (ops/vec_sigmoid.h) less (EfficientNet-B0: BENCHMARKS.md).
      case Activation::kSigmoid: after_.act = MatMulAct::kSigmoid; break;
      case Activation::kSilu: after_.act = MatMulAct::kSilu; break;
      case Activation::kHardSwish: po.append_eltwise(1.f, dnnl::algorithm::eltwise_hardswish, 0.f, 0.f); break;
    }
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    // oneDNN 2.6's AMX bf16 kernel (brgconv:avx512_core_amx_bf16) crashed on a strided layer
    // whose pad is as large as the kernel (rows of output wholly in the padding; e.g. 13 -> 16
    // channels, 2x3 kernel, stride 2, bottom pad 2): every layer with such a pad takes the next one.
    const bool pad_covers_kernel =
        std::max(s.pad_top, d.pad_r[0]) >= (s.kh - 1) * s.dil_h + 1 || std::max(s.pad_left, d.pad_r[1]) >= (s.kw - 1) * s.dil_w + 1;
    const bool avoid_amx = bf16 && pad_covers_kernel;
    if (!onednn_first_impl([&] { return dnnl::convolution_forward::primitive_desc(cd, attr, eng); },
                           [&](const std::string& impl) { return !avoid_amx || impl.find("amx") == std::string::npos; },
                           &pd_))
      throw dnnl::error(dnnl_unimplemented, "no bf16 kernel but AMX's, which fails on a pad as large as the kernel");
    prim_ = dnnl::convolution_forward(pd_);

    // Weights (and bias) are reordered once into the primitive's layout; runtime weights at
    // every run (run_weights).
    user_w_ = memory({d.w, dt::f32, d.w_tag()}, eng, DNNL_MEMORY_NONE);
    weights_ = memory(pd_.weights_desc(), eng);
    w_reorder_ = dnnl::reorder(user_w_, weights_);
    if (has_bias) bias_ = memory(pd_.bias_desc(), eng);
    if (weight) load_weights(weight, bias);
    src_ = OnednnOperand(memory::desc(d.src, dt::f32, user_tag), pd_.src_desc());
    dst_ = OnednnOperand(memory::desc(d.dst, dt::f32, user_tag), pd_.dst_desc());
    scratch_ = memory(pd_.scratchpad_desc(), eng);
    // The memories are fixed; run() only points them at the caller's data.
    args_ = {{DNNL_ARG_SRC, src_.arg()},
             {DNNL_ARG_WEIGHTS, weights_},
             {DNNL_ARG_DST, dst_.arg()},
             {DNNL_ARG_SCRATCHPAD, scratch_}};
    if (has_bias) args_[DNNL_ARG_BIAS] = bias_;
  }

  void run_weights(const float* x, const float* weight, const float* bias, const float* residual, float* y,
                   ThreadPool& pool) const override {
    onednn_set_threads(pool.threads());
    load_weights(weight, bias);
    run(x, residual, y, pool);
  }

  void run(const float* x, const float* residual, float* y, ThreadPool& pool) const override {
    onednn_set_threads(pool.threads());
    src_.read(x, stream_);
    if (ep_.residual) {
      // The sum post-op adds what dst holds: put the residual there first.
      if (dst_.reorder)
        dst_.read(residual, stream_);
      else if (y != residual)  // in place: the residual is already there
        std::memcpy(y, residual, sizeof(float) * static_cast<size_t>(s_.n * s_.m * s_.oh * s_.ow));
    }
    dst_.bind(y);
    prim_.execute(stream_, args_);
    dst_.finish(stream_);
    stream_.wait();
    matmul_activate(after_, y, s_.n * s_.m * s_.oh * s_.ow, pool);
  }

  std::string detail() const override { return pd_.impl_info_str(); }
  // The sum post-op adds what dst holds; a blocked dst reads the residual in before it runs.
  bool residual_in_place() const override { return true; }

 private:
  void load_weights(const float* weight, const float* bias) const {
    user_w_.set_data_handle(const_cast<float*>(weight));
    w_reorder_.execute(stream_, user_w_, weights_);
    if (bias) std::memcpy(bias_.get_data_handle(), bias, sizeof(float) * static_cast<size_t>(s_.m));
    stream_.wait();
  }

  ConvShape s_;
  Epilogue ep_;
  MatMulEpilogue after_;  // the activation applied after the primitive (kNone: none)
  mutable dnnl::stream stream_;
  dnnl::convolution_forward::primitive_desc pd_;
  dnnl::convolution_forward prim_;
  mutable OnednnOperand src_, dst_;
  mutable memory weights_, bias_, scratch_, user_w_;
  std::unordered_map<int, memory> args_;
  dnnl::reorder w_reorder_;
};

}  // namespace

void onednn_set_threads(int threads) {
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
}

std::string onednn_conv_supports(const ConvShape& s, const Epilogue& ep) {
  // Measured with oneDNN 2.6: output rows/columns whose window lies wholly in the padding
  // get the bias but not the sum post-op. Such pads are rare (a pad at least the kernel's
  // extent); refuse them when there is a residual rather than compute them wrong.
  const int64_t eh = (s.kh - 1) * s.dil_h + 1, ew = (s.kw - 1) * s.dil_w + 1;
  if (ep.residual && (s.pad_top >= eh || s.pad_bottom >= eh || s.pad_left >= ew || s.pad_right >= ew))
    return "a pad as large as the kernel with a fused residual (oneDNN 2.6 skips the sum on those rows)";
  return "";
}

std::unique_ptr<ConvKernel> make_onednn_conv(const ConvShape& s, const float* weight, const float* bias, bool has_bias,
                                             const Epilogue& ep, bool channels_last, int threads, bool bf16) {
  return make_onednn_kernel<OnednnConv>("", "convolution " + s.str(), s, weight, bias, has_bias, ep, channels_last,
                                        bf16, threads);
}

const dnnl::engine& onednn_engine() {
  static const dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

int64_t onednn_pad_end(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t dil, int64_t pad_begin) {
  return (out - 1) * stride + (k - 1) * dil + 1 - in - pad_begin;
}

OnednnConvDims onednn_conv_dims(const ConvShape& s) {
  OnednnConvDims d;
  d.src = {s.n, s.c, s.h, s.w};
  d.dst = {s.n, s.m, s.oh, s.ow};
  d.grouped = s.group > 1;
  d.w = d.grouped ? memory::dims{s.group, s.mg(), s.cg(), s.kh, s.kw} : memory::dims{s.m, s.cg(), s.kh, s.kw};
  d.strides = {s.stride_h, s.stride_w};
  d.dil = {s.dil_h - 1, s.dil_w - 1};
  d.pad_l = {s.pad_top, s.pad_left};
  d.pad_r = {onednn_pad_end(s.h, s.oh, s.kh, s.stride_h, s.dil_h, s.pad_top),
             onednn_pad_end(s.w, s.ow, s.kw, s.stride_w, s.dil_w, s.pad_left)};
  return d;
}

OnednnOperand::OnednnOperand(const memory::desc& user_md, const memory::desc& prim_md)
    : user(user_md, onednn_engine(), DNNL_MEMORY_NONE), reorder(user_md != prim_md) {
  if (reorder) {
    prim = memory(prim_md, onednn_engine());
    to_prim = dnnl::reorder(user, prim);
    from_prim = dnnl::reorder(prim, user);
  }
}

void OnednnOperand::read(const void* p, dnnl::stream& s) {
  user.set_data_handle(const_cast<void*>(p));
  if (reorder) to_prim.execute(s, user, prim);
}

void OnednnOperand::finish(dnnl::stream& s) {
  if (reorder) from_prim.execute(s, prim, user);
}

}  // namespace joule::kernels
