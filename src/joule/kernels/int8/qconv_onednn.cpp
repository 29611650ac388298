// Op class "qconv" (joule QConv), algorithm onednn_int8: oneDNN's int8 convolution (VNNI/AMX
// JIT kernels). The primitive picks its blocked layouts (format_tag::any); the int8 weights
// are reordered once here; the codes are reordered from / to NCHW around each run when the
// primitive wants another layout — unless the node is channels_last (x and y N,H,W,C, the
// layout oneDNN's int8 kernels use), when no reorder is needed at all. Per-channel output
// scales, the float bias (in accumulator units), the activation and the output zero point are
// fused (kernels/int8/onednn_int8.h); the input zero point is a runtime attribute oneDNN
// applies exactly, padding included.
#include <dnnl.hpp>

#include "joule/core/cpu_features.h"
#include "joule/kernels/conv/conv_node.h"
#include "joule/kernels/conv/onednn.h"
#include "joule/kernels/int8/onednn_int8.h"

namespace joule::kernels {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;


// Whether oneDNN's implementation `impl` is worth taking for the shape: true for every kernel but
// the AMX ones, which pay on large reductions only. Measured per layer at 1 thread against the
// AVX512-VNNI kernels (ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16) on seven W8A8 CNNs (Intel, AMX-INT8,
// 2026-11-29, 311 layers): the brgemm kernels (brgconv, brgconv_1x1) take 0.3-0.6x the VNNI time
// on ResNet-50's and DenseNet-121's layers, but 1.5-5x on single-pixel layers (squeeze-and-
// excitation) and on narrow outputs with short reductions (MobileNetV2's 144 -> 24 1x1: 1.8x);
// the older AMX kernels (jit, jit_1x1), which oneDNN picks for most inverted-bottleneck 1x1s,
// take 1.5-13x (EfficientNet-B0's 16 -> 96 1x1 with SiLU at 112x112: 1.65 against 0.8 ms), and
// pay only on large layers with a reduction of 64 or more (the 7x7 stem on 3 channels: 0.6x).
// With this choice EfficientNet-B0's convolutions sum to 5.0 ms, against 7.6 with oneDNN's first
// choice and 5.1 with no AMX, and ResNet-50's keep all of AMX's gain (3.9 against 7.0 ms).
bool amx_pays(const std::string& impl, const ConvShape& s) {
  if (impl.find("amx") == std::string::npos) return true;
  const int64_t pixels = s.n * s.oh * s.ow, reduction = s.cg() * s.kh * s.kw;
  if (pixels < 16) return false;
  if (impl.rfind("brg", 0) == 0) return s.m >= 64 || reduction >= 256;
  return reduction >= 64 && s.macs() >= 16e6;
}

// The primitive descriptor for the problem (throws dnnl::error when oneDNN has no
// implementation; some grouped shapes with a swish post-op fail only when the primitive is made):
// oneDNN's first implementation, or the next one when that is an AMX kernel that does not pay.
dnnl::convolution_forward::primitive_desc primitive_desc(const QConvProblem& p) {
  const ConvShape& s = p.s;
  const Int8Params& q = p.q;
  const memory::dims src_dims = {s.n, s.c, s.h, s.w}, dst_dims = {s.n, s.m, s.oh, s.ow};
  const memory::dims w_dims = s.group > 1 ? memory::dims{s.group, s.mg(), s.cg(), s.kh, s.kw}
                                          : memory::dims{s.m, s.cg(), s.kh, s.kw};
  const dt src_t = onednn_code_type(q.x_type), dst_t = onednn_code_type(q.y_type);
  const memory::desc bias_md = q.rq.bias_acc.empty() ? memory::desc() : memory::desc({s.m}, dt::f32, tag::x);
  dnnl::convolution_forward::desc d(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
      memory::desc(src_dims, src_t, tag::any), memory::desc(w_dims, dt::s8, tag::any), bias_md,
      memory::desc(dst_dims, dst_t, tag::any), {s.stride_h, s.stride_w}, {s.dil_h - 1, s.dil_w - 1},
      {s.pad_top, s.pad_left}, {onednn_pad_end(s.h, s.oh, s.kh, s.stride_h, s.dil_h, s.pad_top),
                                onednn_pad_end(s.w, s.ow, s.kw, s.stride_w, s.dil_w, s.pad_left)});
  dnnl::convolution_forward::primitive_desc pd;
  onednn_first_impl([&] { return dnnl::convolution_forward::primitive_desc(d, onednn_int8_attr(q), onednn_engine()); },
                    [&](const std::string& impl) { return amx_pays(impl, s); }, &pd);
  return pd;
}

class OnednnQConv : public Kernel {
 public:
  OnednnQConv(const QConvProblem& p, int threads) : p_(p), stream_(onednn_engine()) {
    onednn_set_threads(threads);
    const ConvShape& s = p.s;
    const Int8Params& q = p.q;
    const auto& eng = onednn_engine();
    const memory::dims src_dims = {s.n, s.c, s.h, s.w}, dst_dims = {s.n, s.m, s.oh, s.ow};
    const bool grouped = s.group > 1;
    const memory::dims w_dims = grouped ? memory::dims{s.group, s.mg(), s.cg(), s.kh, s.kw}
                                        : memory::dims{s.m, s.cg(), s.kh, s.kw};
    const tag user_tag = p.channels_last ? tag::nhwc : tag::nchw;
    user_src_md_ = memory::desc(src_dims, onednn_code_type(q.x_type), user_tag);
    user_dst_md_ = memory::desc(dst_dims, onednn_code_type(q.y_type), user_tag);
    pd_ = primitive_desc(p);
    prim_ = dnnl::convolution_forward(pd_);

    memory user_w({w_dims, dt::s8, grouped ? tag::goihw : tag::oihw}, eng, const_cast<int8_t*>(q.w->data<int8_t>()));
    weights_ = memory(pd_.weights_desc(), eng);
    dnnl::reorder(user_w, weights_).execute(stream_, user_w, weights_);
    stream_.wait();
    user_src_ = memory(user_src_md_, eng, DNNL_MEMORY_NONE);
    user_dst_ = memory(user_dst_md_, eng, DNNL_MEMORY_NONE);
    reorder_src_ = pd_.src_desc() != user_src_md_;
    reorder_dst_ = pd_.dst_desc() != user_dst_md_;
    if (reorder_src_) {
      src_ = memory(pd_.src_desc(), eng);
      src_reorder_ = dnnl::reorder(user_src_, src_);
    }
    if (reorder_dst_) {
      dst_ = memory(pd_.dst_desc(), eng);
      dst_reorder_ = dnnl::reorder(dst_, user_dst_);
    }
    scratch_ = memory(pd_.scratchpad_desc(), eng);
    args_ = {{DNNL_ARG_SRC, reorder_src_ ? src_ : user_src_},
             {DNNL_ARG_WEIGHTS, weights_},
             {DNNL_ARG_DST, reorder_dst_ ? dst_ : user_dst_},
             {DNNL_ARG_SCRATCHPAD, scratch_}};
    onednn_bind_int8_args(q, pd_.bias_desc(), args_);
  }

  void run(ops::KernelContext& k) const override {
    check_int8_input(k, p_.q, p_.x_shape);
    const Tensor& X = k.in(0);
    Tensor& Y = k.output(0, p_.q.y_type, p_.y_shape);
    onednn_set_threads(k.pool->threads());
    user_src_.set_data_handle(const_cast<void*>(X.raw()));
    user_dst_.set_data_handle(Y.raw());
    if (reorder_src_) src_reorder_.execute(stream_, user_src_, src_);
    prim_.execute(stream_, args_);
    if (reorder_dst_) dst_reorder_.execute(stream_, dst_, user_dst_);
    stream_.wait();
  }

  std::string detail() const override { return pd_.impl_info_str(); }

 private:
  QConvProblem p_;
  mutable dnnl::stream stream_;
  dnnl::convolution_forward::primitive_desc pd_;
  dnnl::convolution_forward prim_;
  memory::desc user_src_md_, user_dst_md_;
  mutable memory user_src_, user_dst_, src_, dst_, weights_, scratch_;
  bool reorder_src_ = false, reorder_dst_ = false;
  std::unordered_map<int, memory> args_;
  dnnl::reorder src_reorder_, dst_reorder_;
};

std::string supports(const NodeView& v) {
  QConvProblem p;
  if (std::string r = read_qconv_problem(v, &p); !r.empty()) return r;
  if (std::string why = onednn_int8_inexact_reason(p.q); !why.empty()) return why;
  if (p.q.rq.act < 4) return "";
  try {  // oneDNN lacks some grouped kernels with a swish / hardswish post-op
    onednn_set_threads(v.threads);  // the implementation depends on the team size
    dnnl::convolution_forward prim(primitive_desc(p));  // JIT code made (and cached) here
    return "";
  } catch (const dnnl::error&) {
    return "oneDNN has no int8 kernel for " + p.s.str() + " with the " + v.node.attr_string("activation", "") + " post-op";
  }
}

double estimate_ms(const NodeView& v) {
  QConvProblem p;
  read_qconv_problem(v, &p);
  // VNNI: ~4x the FP32 FMA rate; without it (vpmaddubsw + vpmaddwd) ~1.6x (whole W7A8
  // ResNet-50 at 1 thread on a Zen 3: 0.59x of its FP32 time); activations moved twice (reorders).
  const double bytes = static_cast<double>(p.s.n) * (p.s.c * p.s.h * p.s.w + p.s.m * p.s.oh * p.s.ow);
  const double rate = cpu_features().int8_dot ? 600e9 : 150e9;
  return 2.0 * p.s.macs() / (rate * v.threads) * 1e3 + 2 * bytes / 10e9 * 1e3 + 0.005;
}

std::unique_ptr<Kernel> prepare(const NodeView& v) {
  QConvProblem p;
  if (std::string r = read_qconv_problem(v, &p); !r.empty()) fail_internal(v.node.where() + ": " + r);
  return make_onednn_kernel<OnednnQConv>(v.node.where() + ": ", "int8 convolution " + p.s.str(), p, v.threads);
}

}  // namespace

extern const Algorithm kQConvOnednnInt8;
const Algorithm kQConvOnednnInt8{"qconv", "onednn_int8",
                                 "oneDNN int8 convolution (VNNI/AMX JIT, or AVX2 for uint8 inputs and 7-bit weights; "
                                 "blocked layouts, fused scales and post-ops)",
                                 supports, estimate_ms, prepare};

}  // namespace joule::kernels
