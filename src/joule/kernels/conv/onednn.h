#pragma once
// Convolution through oneDNN's convolution primitive (the vendor library). On N,C,H,W tensors
// the primitive picks its blocked layouts (format_tag::any) and activations are reordered from /
// to NCHW around each run; with `channels_last` the tensors are N,H,W,C and the primitive
// computes in that layout (oneDNN's nxc kernels), so nothing is reordered. Constant weights are
// reordered once here; weights given at run time (training) at every run. Bias, residual (sum
// post-op) and activation (eltwise post-op) are fused into the primitive, except ReLU and Clip:
// oneDNN 2.6's post-ops for those turn NaN into the bound (vmaxps/vminps with the NaN first; tried:
// eltwise_relu with alpha = 0, eltwise_clip, eltwise_clip_v2, binary_max/min), so they run as a
// pass over the output after the primitive (matmul_activate), which keeps NaN as PyTorch does;
// so do Sigmoid and SiLU, whose oneDNN post-ops (about 0.38 ns per value here) cost more than
// joule's pass (ops/vec_sigmoid.h: EfficientNet-B0 0.93-0.96x the time). `bf16`: the primitive
// multiplies in bfloat16 (AVX512-BF16 / AMX) and sums in float32; the float32 source is
// converted at every run, the weights once, and bias, post-ops and output stay float32.
#include <dnnl.hpp>
#include <memory>
#include <string>

#include "joule/core/error.h"
#include "joule/kernels/conv/conv_shape.h"

namespace joule::kernels {

std::string onednn_conv_supports(const ConvShape& s, const Epilogue& ep);
// `weight` null: the weights (and bias, when `has_bias`) come with every run (run_weights).
std::unique_ptr<ConvKernel> make_onednn_conv(const ConvShape& s, const float* weight, const float* bias, bool has_bias,
                                             const Epilogue& ep, bool channels_last, int threads, bool bf16 = false);

// Makes oneDNN (OpenMP) use `threads` threads on the calling thread: the engine's pool and
// oneDNN's team never run at the same time, so there is no oversubscription. Must also be
// called before a primitive is created: oneDNN fixes its team size then.
void onednn_set_threads(int threads);

// Builds a kernel K whose constructor creates oneDNN primitives: oneDNN's refusal (no
// implementation for the shape, types or attributes) becomes fail_unsupported,
// "<where>oneDNN refused the <what>: <oneDNN's message>".
template <class K, class... Args>
std::unique_ptr<K> make_onednn_kernel(const std::string& where, const std::string& what, Args&&... args) {
  try {
    return std::make_unique<K>(std::forward<Args>(args)...);
  } catch (const dnnl::error& e) {
    fail_unsupported(where + "oneDNN refused the " + what + ": " + e.what());
  }
}

// The first of oneDNN's implementations of make()'s primitive descriptor (in oneDNN's order of
// preference) whose name `ok` accepts, into *pd; false, with *pd at oneDNN's first choice, when
// none does. How joule steers oneDNN away from kernels that are slow or broken for a shape.
template <class Make, class Ok>
bool onednn_first_impl(const Make& make, const Ok& ok, decltype(make())* pd) {
  *pd = make();
  if (ok(std::string(pd->impl_info_str()))) return true;
  auto next = make();  // iterated separately: *pd stays at the first choice if none passes
  while (next.next_impl())
    if (ok(std::string(next.impl_info_str()))) {
      *pd = next;
      return true;
    }
  return false;
}

// The CPU engine every oneDNN primitive of joule runs on (created on first use).
const dnnl::engine& onednn_engine();

// oneDNN wants the end padding that makes (in + pb + pe - extent) / stride exact; ONNX's
// floor division may leave unused rows at the end, so it is derived from the output size.
int64_t onednn_pad_end(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t dil, int64_t pad_begin);

// A convolution's geometry as oneDNN's descriptors take it (weights grouped when group > 1).
struct OnednnConvDims {
  dnnl::memory::dims src, dst, w, strides, dil, pad_l, pad_r;
  bool grouped = false;
  dnnl::memory::format_tag w_tag() const { return grouped ? dnnl::memory::format_tag::goihw : dnnl::memory::format_tag::oihw; }
};
OnednnConvDims onednn_conv_dims(const ConvShape& s);

// A caller's buffer in its plain layout and the primitive's copy of it, made once, when the
// primitive chose another layout. arg() is what the primitive is given; the caller's pointer
// is set at every run (read: an input, brought into the primitive's layout; bind + finish: an
// output, written back after the primitive ran).
struct OnednnOperand {
  dnnl::memory user, prim;
  dnnl::reorder to_prim, from_prim;
  bool reorder = false;

  OnednnOperand() = default;
  OnednnOperand(const dnnl::memory::desc& user_md, const dnnl::memory::desc& prim_md);
  const dnnl::memory& arg() const { return reorder ? prim : user; }
  void read(const void* p, dnnl::stream& s);
  void bind(float* p) { user.set_data_handle(p); }
  void finish(dnnl::stream& s);
};

}  // namespace joule::kernels
