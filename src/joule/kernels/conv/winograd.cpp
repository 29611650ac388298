// Winograd convolution F(TxT, 3x3), T = 2 or 4 (Lavin & Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2015), in the blocked form of NNPACK / ncnn: the shapes it
// takes, and the ISA's build (winograd_avx512.cpp, winograd_avx2.cpp; the method in
// winograd_impl.h).
#include "joule/kernels/conv/winograd.h"

#include "joule/core/cpu_features.h"
#include "joule/core/error.h"

namespace joule::kernels {

std::unique_ptr<ConvKernel> make_winograd_conv_avx512(const ConvShape& s, const float* weight, const float* bias,
                                                      const Epilogue& ep, int tile, bool nhwc, int threads);
std::unique_ptr<ConvKernel> make_winograd_conv_avx512_bf16(const ConvShape& s, const float* weight, const float* bias,
                                                           const Epilogue& ep, int tile, bool nhwc, int threads);
std::unique_ptr<ConvKernel> make_winograd_conv_avx2(const ConvShape& s, const float* weight, const float* bias,
                                                    const Epilogue& ep, int tile, bool nhwc, int threads);

std::string winograd_supports(const ConvShape& s, int tile) {
  if (tile != 2 && tile != 4) return "winograd tile must be 2 (F(2x2,3x3)) or 4 (F(4x4,3x3))";
  if (s.kh != 3 || s.kw != 3 || s.stride_h != 1 || s.stride_w != 1 || s.dil_h != 1 || s.dil_w != 1)
    return "winograd needs a 3x3 kernel, stride 1, dilation 1";
  if (s.group < 1 || s.c % s.group != 0 || s.m % s.group != 0) return "winograd: channels not divisible by group";
  if (s.depthwise() && s.group > 1) return "winograd does not do depthwise convolution (one channel per group)";
  if (s.pad_top < 0 || s.pad_left < 0 || s.pad_bottom < 0 || s.pad_right < 0) return "winograd: negative pads";
  if (s.oh != s.h + s.pad_top + s.pad_bottom - 2 || s.ow != s.w + s.pad_left + s.pad_right - 2 || s.oh < 1 ||
      s.ow < 1)
    return "winograd: output size inconsistent with the input size and pads";
  return "";
}

std::string winograd_bf16_unsupported_reason() {
  if (cpu_features().avx512_bf16) return "";
  return "winograd_bf16 needs AVX512-BF16 (this CPU: " + cpu_features().model + ", " + cpu_features().isa + ")";
}

std::unique_ptr<ConvKernel> make_winograd_conv(const ConvShape& s, const float* weight, const float* bias,
                                               const Epilogue& ep, int tile, int threads, bool nhwc, bool bf16) {
  const std::string why = winograd_supports(s, tile);
  if (!why.empty()) fail_unsupported(why);
  if (bf16) {
    if (std::string r = winograd_bf16_unsupported_reason(); !r.empty()) fail_unsupported(r);
    return make_winograd_conv_avx512_bf16(s, weight, bias, ep, tile, nhwc, threads);
  }
  if (cpu_features().avx512) return make_winograd_conv_avx512(s, weight, bias, ep, tile, nhwc, threads);
  if (cpu_features().avx2_fma) return make_winograd_conv_avx2(s, weight, bias, ep, tile, nhwc, threads);
  fail_unsupported("winograd needs AVX2 with FMA or AVX-512 (this CPU: " + cpu_features().isa + ")");
}

}  // namespace joule::kernels
