// Convolution on the GPU through cuDNN, one joule algorithm per cuDNN forward algorithm, so that
// `--algo conv=winograd` or `NODE=fft` pick them per layer exactly as on the CPU, `guess` takes
// cuDNN's heuristic first choice and `auto` measures them all. Conv and joule's FusedConv
// (N,C,H,W; 1-D convs as H = 1), groups and dilations, symmetric pads; bias, residual and
// activation in one epilogue kernel after cuDNN's.
#include <array>
#include <map>
#include <memory>

#include "joule/cuda/gpu_kernel.h"
#include "joule/ops/conv_util.h"
#include "joule/ops/nn_util.h"

namespace joule::cuda {
namespace {

struct ConvDesc {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int64_t channels = 0, inner = 0, y_numel = 0;
  ConvDesc() {
    check(cudnnCreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor");
    check(cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor");
    check(cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor");
    check(cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor");
  }
  ~ConvDesc() {
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyConvolutionDescriptor(conv);
  }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
};

// The type cuDNN computes the node in: its input's, or the half type --gpu-math asks for while
// the graph is still float32 (placement asks before lower_gpu_floats converts it).
DType conv_dtype(const kernels::NodeView& v) {
  const DType t = v.in_types[0]->dtype;
  if (t != DType::Float32) return t;
  const std::string m = gpu_math_of(v.node);
  return m == "fp16" ? DType::Float16 : m == "bf16" ? DType::BFloat16 : t;
}
cudnnDataType_t cudnn_type(DType t) {
  return t == DType::Float16 ? CUDNN_DATA_HALF : t == DType::BFloat16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}


// The descriptors of node v, or null with `why` set.
std::unique_ptr<ConvDesc> describe(const kernels::NodeView& v, std::string* why) {
  const ir::Node& n = v.node;
  if (n.attr_int("channels_last", 0) != 0) {
    *why = "channels_last layout";
    return nullptr;
  }
  if (std::string r = static_shapes(v, {}); !r.empty()) {
    *why = r;
    return nullptr;
  }
  const Shape xs = v.in_types[0]->static_shape(), ws = v.in_types[1]->static_shape(), ys = v.out_types[0]->static_shape();
  if (std::string r = same_float(v, {0, 1, 2, 3}); !r.empty()) {
    *why = r;
    return nullptr;
  }
  if (xs.size() != 4 && xs.size() != 3) {
    *why = std::to_string(xs.size() - 2) + "-D convolution (1-D and 2-D only)";
    return nullptr;
  }
  k::Act act;
  float pa = 0, pb = 0;
  if (!fused_activation(n, &act, &pa, &pb)) {
    *why = "activation " + n.attr_string("activation", "");
    return nullptr;
  }
  const int nsp = static_cast<int>(xs.size()) - 2;
  const ops::ConvGeometry g = ops::read_conv_geometry(n, nsp, {ws.begin() + 2, ws.end()});
  int pads[2] = {0, 0}, strides[2] = {1, 1}, dil[2] = {1, 1};
  for (int i = 0; i < nsp; ++i) {
    int64_t pb = 0, pe = 0;
    ops::conv_out_dim(g, n, i, xs[static_cast<size_t>(2 + i)], &pb, &pe);
    if (pb != pe) {
      *why = "asymmetric pads";
      return nullptr;
    }
    const int k = nsp == 1 ? 1 : i;  // a 1-D conv is 2-D with H = 1
    pads[k] = static_cast<int>(pb);
    strides[k] = static_cast<int>(g.strides[static_cast<size_t>(i)]);
    dil[k] = static_cast<int>(g.dilations[static_cast<size_t>(i)]);
  }
  auto d4 = [](const Shape& s) -> std::array<int, 4> {
    if (s.size() == 3) return {static_cast<int>(s[0]), static_cast<int>(s[1]), 1, static_cast<int>(s[2])};
    return {static_cast<int>(s[0]), static_cast<int>(s[1]), static_cast<int>(s[2]), static_cast<int>(s[3])};
  };
  const auto x4 = d4(xs), w4 = d4(ws), y4 = d4(ys);
  auto d = std::make_unique<ConvDesc>();
  const int groups = static_cast<int>(n.attr_int("group", 1));
  const DType dt = conv_dtype(v);
  const cudnnDataType_t ct = cudnn_type(dt);
  check(cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NCHW, ct, x4[0], x4[1], x4[2], x4[3]), "x descriptor");
  check(cudnnSetFilter4dDescriptor(d->w, ct, CUDNN_TENSOR_NCHW, w4[0], w4[1], w4[2], w4[3]), "w descriptor");
  // Half types accumulate in float32 (cuDNN's PSEUDO_HALF / BFLOAT16 configurations).
  check(cudnnSetConvolution2dDescriptor(d->conv, pads[0], pads[1], strides[0], strides[1], dil[0], dil[1],
                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "conv descriptor");
  check(cudnnSetConvolutionGroupCount(d->conv, groups), "group count");
  const bool tensor_cores = dt != DType::Float32 || gpu_math_of(n) == "tf32";
  check(cudnnSetConvolutionMathType(d->conv, tensor_cores ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH), "math type");
  int o[4];
  check(cudnnGetConvolution2dForwardOutputDim(d->conv, d->x, d->w, &o[0], &o[1], &o[2], &o[3]), "output dims");
  if (o[0] != y4[0] || o[1] != y4[1] || o[2] != y4[2] || o[3] != y4[3]) {
    *why = "cuDNN's output shape differs from the planned " + shape_str(ys);
    return nullptr;
  }
  check(cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NCHW, ct, y4[0], y4[1], y4[2], y4[3]), "y descriptor");
  d->channels = y4[1];
  d->inner = static_cast<int64_t>(y4[2]) * y4[3];
  d->y_numel = shape_numel(ys);
  return d;
}

class ConvKernel : public GpuKernel {
 public:
  ConvKernel(const kernels::NodeView& v, cudnnConvolutionFwdAlgo_t algo, std::unique_ptr<ConvDesc> d)
      : GpuKernel(v), algo_(algo), d_(std::move(d)) {
    check(cudnnGetConvolutionForwardWorkspaceSize(ctx_->dnn, d_->x, d_->w, d_->conv, d_->y, algo_, &ws_), "workspace size");
    // Its own workspace, at a fixed address for the session's life (captured graphs replay it).
    if (ws_) ws_buf_ = empty(DType::UInt8, {static_cast<int64_t>(ws_)}, device_);
    fused_activation(v.node, &act_, &pa_, &pb_);
    has_bias_ = v.has(2);
    has_z_ = v.has(3);
  }
  void run(ops::KernelContext& k) const override {
    const Tensor& x = in(k, 0);
    const Tensor& w = in(k, 1);
    Tensor& y = out(k, 0);
    const float one = 1.f, zero = 0.f;
    void* ws = ws_ ? const_cast<void*>(ws_buf_.raw()) : nullptr;
    check(cudnnConvolutionForward(ctx_->dnn, &one, d_->x, x.raw(), d_->w, w.raw(), d_->conv, algo_, ws, ws_, &zero, d_->y, y.raw()),
          "cudnnConvolutionForward");
    if (has_bias_ || has_z_ || act_ != k::Act::None)
      k::epilogue(y.raw(), has_bias_ ? in(k, 2).raw() : nullptr, has_z_ ? in(k, 3).raw() : nullptr, d_->y_numel, d_->channels,
                  d_->inner, act_, pa_, pb_, elt_, stream());
  }
  std::string detail() const override {
    const char* math = elt_ == k::Elt::F16 ? "fp16" : elt_ == k::Elt::BF16 ? "bf16" : tf32_ ? "tf32" : "fp32";
    return "cuDNN " + std::string(math) + ", workspace " + std::to_string(ws_ >> 10) + " KB";
  }

 private:
  cudnnConvolutionFwdAlgo_t algo_;
  std::unique_ptr<ConvDesc> d_;
  size_t ws_ = 0;
  Tensor ws_buf_;
  k::Act act_ = k::Act::None;
  float pa_ = 0, pb_ = 0;
  bool has_bias_ = false, has_z_ = false;
};

template <cudnnConvolutionFwdAlgo_t A>
std::string supports(const kernels::NodeView& v) {
  if (v.device < 0) return "GPU nodes only";
  std::string why;
  auto d = describe(v, &why);
  if (!d) return why;
  size_t ws = 0;
  const cudnnStatus_t s = cudnnGetConvolutionForwardWorkspaceSize(context(v.device).dnn, d->x, d->w, d->conv, d->y, A, &ws);
  if (s != CUDNN_STATUS_SUCCESS) return std::string("cuDNN: ") + cudnnGetErrorString(s);
  if (ws > (size_t{4} << 30)) return "workspace over 4 GB";
  return "";
}

// cuDNN's heuristic ranking: its first choice estimates lowest.
template <cudnnConvolutionFwdAlgo_t A>
double estimate(const kernels::NodeView& v) {
  std::string why;
  auto d = describe(v, &why);
  if (!d) return 1e9;
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int got = 0;
  check(cudnnGetConvolutionForwardAlgorithm_v7(context(v.device).dnn, d->x, d->w, d->conv, d->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf),
        "cudnnGetConvolutionForwardAlgorithm_v7");
  for (int i = 0; i < got; ++i)
    if (perf[i].algo == A && perf[i].status == CUDNN_STATUS_SUCCESS) return 1.0 + i;
  return 1e6;
}

template <cudnnConvolutionFwdAlgo_t A>
std::unique_ptr<kernels::Kernel> prepare(const kernels::NodeView& v) {
  std::string why;
  auto d = describe(v, &why);
  if (!d) fail_internal(v.node.where() + ": " + why);
  return std::make_unique<ConvKernel>(v, A, std::move(d));
}

template <cudnnConvolutionFwdAlgo_t A>
kernels::Algorithm make(const char* name, const char* summary) {
  return kernels::Algorithm{"conv", name, summary, supports<A>, estimate<A>, prepare<A>, false, "cuda"};
}

const kernels::Algorithm kImplicitGemm = make<CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM>("implicit_gemm", "cuDNN implicit GEMM (no workspace)");
const kernels::Algorithm kImplicitPrecompGemm =
    make<CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM>("implicit_precomp_gemm", "cuDNN implicit GEMM with precomputed indices");
const kernels::Algorithm kGemm = make<CUDNN_CONVOLUTION_FWD_ALGO_GEMM>("gemm", "cuDNN explicit im2col + GEMM");
const kernels::Algorithm kDirect = make<CUDNN_CONVOLUTION_FWD_ALGO_DIRECT>("direct", "cuDNN direct convolution");
const kernels::Algorithm kFft = make<CUDNN_CONVOLUTION_FWD_ALGO_FFT>("fft", "cuDNN FFT convolution");
const kernels::Algorithm kFftTiling = make<CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING>("fft_tiling", "cuDNN tiled FFT convolution");
const kernels::Algorithm kWinograd = make<CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD>("winograd", "cuDNN fused Winograd");
const kernels::Algorithm kWinogradNonfused =
    make<CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED>("winograd_nonfused", "cuDNN non-fused Winograd");

// Depthwise convolutions (one filter per channel) as joule's own direct kernel with the epilogue
// fused: cuDNN's float32 algorithms are slow on them (PyTorch has its own kernel for the same reason).
std::string depthwise_plan(const kernels::NodeView& v, k::Depthwise* p) {
  const ir::Node& n = v.node;
  if (v.device < 0) return "GPU nodes only";
  if (n.attr_int("channels_last", 0) != 0) return "channels_last layout";
  if (std::string r = static_shapes(v, {}); !r.empty()) return r;
  if (std::string r = same_float(v, {0, 1, 2, 3}); !r.empty()) return r;
  const Shape xs = v.in_types[0]->static_shape(), ws = v.in_types[1]->static_shape(), ys = v.out_types[0]->static_shape();
  if (xs.size() != 4) return "2-D convolutions only";
  const int64_t group = n.attr_int("group", 1);
  if (group != xs[1] || ws[0] != xs[1] || ws[1] != 1) return "not depthwise (group = channels, one filter each)";
  k::Act act;
  float pa = 0, pb = 0;
  if (!fused_activation(n, &act, &pa, &pb)) return "activation " + n.attr_string("activation", "");
  const ops::ConvGeometry g = ops::read_conv_geometry(n, 2, {ws[2], ws[3]});
  int64_t pb0 = 0, pe0 = 0, pb1 = 0, pe1 = 0;
  ops::conv_out_dim(g, n, 0, xs[2], &pb0, &pe0);
  ops::conv_out_dim(g, n, 1, xs[3], &pb1, &pe1);
  *p = k::Depthwise{xs[0], xs[1], xs[2], xs[3], ys[2], ys[3], static_cast<int>(ws[2]), static_cast<int>(ws[3]),
                    static_cast<int>(g.strides[0]), static_cast<int>(g.strides[1]), static_cast<int>(pb0), static_cast<int>(pb1),
                    static_cast<int>(g.dilations[0]), static_cast<int>(g.dilations[1])};
  return "";
}

class DepthwiseKernel : public GpuKernel {
 public:
  DepthwiseKernel(const kernels::NodeView& v, k::Depthwise p) : GpuKernel(v), p_(p) {
    fused_activation(v.node, &act_, &pa_, &pb_);
    has_bias_ = v.has(2);
    has_z_ = v.has(3);
  }
  void run(ops::KernelContext& k) const override {
    Tensor& y = out(k, 0);
    k::depthwise(in(k, 0).raw(), in(k, 1).raw(), has_bias_ ? in(k, 2).raw() : nullptr, has_z_ ? in(k, 3).raw() : nullptr, y.raw(), p_,
                 act_, pa_, pb_, elt_, stream());
  }
  std::string detail() const override { return "joule direct depthwise kernel, epilogue fused"; }

 private:
  k::Depthwise p_;
  k::Act act_ = k::Act::None;
  float pa_ = 0, pb_ = 0;
  bool has_bias_ = false, has_z_ = false;
};

std::string depthwise_supports(const kernels::NodeView& v) {
  k::Depthwise p;
  return depthwise_plan(v, &p);
}
// Ranked after cuDNN's heuristic first choice (1.0), before its others: on an H200 at batch 32
// cuDNN's implicit GEMM ran MobileNetV2's depthwise layers in 0.6-0.75x this kernel's time.
double depthwise_estimate(const kernels::NodeView&) { return 1.5; }
std::unique_ptr<kernels::Kernel> depthwise_prepare(const kernels::NodeView& v) {
  k::Depthwise p;
  if (std::string r = depthwise_plan(v, &p); !r.empty()) fail_internal(v.node.where() + ": " + r);
  return std::make_unique<DepthwiseKernel>(v, p);
}
const kernels::Algorithm kDepthwise{"conv", "depthwise", "joule CUDA kernel: direct depthwise convolution with the epilogue fused",
                                    depthwise_supports, depthwise_estimate, depthwise_prepare, false, "cuda"};

}  // namespace

const std::vector<const kernels::Algorithm*>& conv_algorithms() {
  static const std::vector<const kernels::Algorithm*> all = {&kImplicitPrecompGemm, &kImplicitGemm, &kGemm, &kDirect,
                                                             &kFft, &kFftTiling, &kWinograd, &kWinogradNonfused, &kDepthwise};
  return all;
}

}  // namespace joule::cuda
