// The convolution algorithms as registered Algorithms: each pairs its support test with the
// common node checks (read_conv_problem), a rough time estimate for `guess`, and its factory.
// Estimates are effective 1-thread GFLOP/s, scaled by threads; they only need to rank the
// algorithms. The constants were fitted to the measured times in a tuning cache (`--algo auto`)
// of resnet18, resnet50, mobilenet_v2 and mobilenet_v3_small on an AVX-512
// machine: `guess` then comes within 1.5 % of the per-layer best on those layers
// (BENCHMARKS.md, "guess against auto").
#include "joule/core/cpu_features.h"
#include "joule/kernels/conv/conv_node.h"
#include <algorithm>
#include <cmath>

#include "joule/kernels/conv/direct.h"
#include "joule/kernels/conv/fft.h"
#include "joule/kernels/conv/grouped.h"
#include "joule/kernels/conv/im2col_gemm.h"
#include "joule/kernels/conv/implicit_gemm.h"
#include "joule/kernels/conv/implicit_nhwc.h"
#include "joule/kernels/conv/onednn.h"
#include "joule/kernels/conv/winograd.h"

namespace joule::kernels {
namespace {

// Time of the direct convolution's FLOPs at an effective 1-thread rate, scaled by threads.
double time_ms(const ConvShape& s, int threads, double gflops, double overhead_ms) {
  return 2.0 * s.macs() / (gflops * 1e9 * threads) * 1e3 + overhead_ms;
}

// Rate factors of thin grouped convolutions (1 < group, not depthwise): few input channels per
// group leave little reduction per output. Measured at 1 thread on resnext50_32x4d's grouped
// 3x3 layers (C/group 4, 8, 16, 32): oneDNN's rate follows about (C/group / 32)^0.6, Winograd's
// (whose transforms do not shrink with the group) about C/group / 32, the direct loops' about
// 0.7 of their dense rate.
bool thin_grouped(const ConvShape& s) { return s.group > 1 && !s.depthwise(); }
// Without AVX-512 oneDNN's grouped kernels fall off linearly (Zen 3, 1 thread, resnext50_32x4d in
// N,C,H,W: 7.4 GFLOP/s at C/group 4, 24 at 8, 34 at 16, against ~80 dense).
double onednn_group_factor(const ConvShape& s) {
  if (!thin_grouped(s)) return 1.0;
  const double r = static_cast<double>(s.cg()) / 32.0;
  return std::min(1.0, cpu_features().avx512 ? std::pow(r, 0.6) : r);
}
double linear_group_factor(const ConvShape& s) {
  return thin_grouped(s) ? std::min(1.0, static_cast<double>(s.cg()) / 32.0) : 1.0;
}

// oneDNN's rate on a channels_last kxk conv (neither 1x1 nor depthwise), before the group factor.
// Without AVX-512 (oneDNN's AVX2 kernels; AMD Zen 3, 1 thread, a 3x3 conv between two 1x1
// convs of 64 to 320 channels at 14 to 112 pixels square, N,H,W,C against N,C,H,W alternated,
// 2026-11-27): the N,H,W,C kxk kernel keeps up with the blocked N,C,H,W one while its input
// fits in about 1 MB, and takes 1.2-2.7x its time above (VGG-16's 224 and 112 layers, 56x56
// with 128 channels or more): the N,C,H,W rate there, halved. The same holds for
// the batch's input: ResNet-50 at batch 8, its kxk layers 411.8 ms in N,H,W,C, 367.1 in N,C,H,W.
// Narrow outputs (below 64 channels, outside that sweep) keep N,H,W,C: DenseNet-121's 3x3
// layers (128 -> 32 channels at 56x56) took as long in N,C,H,W and added 2-3 ms of Transposes.
// Thin grouped convs: ResNeXt-50's 4 channels per group (not a multiple of the 8-float vector)
// took 2.7x the N,C,H,W time above 1 MB; with 8 or 16 per group the threshold is higher:
// RegNetY's 8 per group at 56x56 (1.3 MB) 0.7x of the N,C,H,W time, RegNetX's 16 per group at
// batch 8 (6.4 and 12.8 MB) 1.4-1.6x.
double nhwc_kxk_gflops(const ConvShape& s) {
  if (cpu_features().avx512) return 160;
  const double in_bytes = 4.0 * static_cast<double>(s.n * s.c * s.h * s.w);  // the whole batch's
  if (thin_grouped(s)) {
    if (s.cg() % 8 != 0) return 140 * 0.35;
    // RegNetY's 8 and RegNetX's 16 channels per group, every 3x3 layer at batch 1 and 8 in
    // N,H,W,C (2026-11-27, Zen 3): 20-31 and 41-56 GFLOP/s at batch 1, 8-23 and 20-45 at batch 8
    // with inputs above 4 MB.
    return in_bytes <= 4194304 ? 140 * 0.8 : 140 * 0.4;
  }
  // Strided: ResNet-50's stride-2 3x3 layers (28x28x256, 14x14x512; 56x56x128 above 1 MB)
  // ran at 54-56 real GFLOP/s, against ~80 for stride 1 (2026-11-28, Zen 3).
  const double stride = s.stride_h * s.stride_w > 1 ? 0.75 : 1.0;
  if (in_bytes <= 1048576 || s.m < 64) return 140 * stride;
  return 140 * 0.5 * stride;
}

// ---- onednn
std::string onednn_supports(const NodeView& v) {
  ConvProblem p;
  if (std::string r = read_conv_problem(v, &p, /*runtime_weights_ok=*/true); !r.empty()) return r;
  return onednn_conv_supports(p.shape, p.epilogue);
}
double onednn_estimate(const NodeView& v) {
  ConvProblem p;
  read_conv_problem(v, &p, true);
  // Activation reorders to and from blocked layouts cost about a pass over both tensors (none
  // on channels_last tensors, which the primitive computes in place).
  const double bytes = p.channels_last ? 0.0 : 4.0 * (p.shape.n * p.shape.c * p.shape.h * p.shape.w + p.shape.n * p.shape.m * p.shape.oh * p.shape.ow);
  // Compute rates without the reorders: ~140 GFLOP/s on kxk layers, ~90 on 1x1, ~20 on
  // depthwise (1 thread, AVX-512, fitted to measured times; see the note at
  // the top).
  // On channels_last tensors oneDNN's nxc kernels measured (in mobilenet_v2 and resnet18, the
  // same session as the N,C,H,W algorithms) 2.5x the depthwise rate and 1.4x the 1x1 rate of
  // N,C,H,W, and ~0.6x Winograd's effective rate on large 3x3 maps.
  const ConvShape& s = p.shape;
  const double gf = (p.channels_last ? (s.depthwise() ? 50 : s.kh * s.kw == 1 ? 145 : nhwc_kxk_gflops(s))
                                     : (s.depthwise() ? 20 : s.kh * s.kw == 1 ? 90 : 140)) *
                    onednn_group_factor(s);
  return time_ms(p.shape, v.threads, gf, 0.002) + 2 * bytes / 20e9 * 1e3;
}
std::unique_ptr<Kernel> onednn_prepare(const NodeView& v) {
  return prepare_conv(v, [](const ConvProblem& p, int threads) {
    return make_onednn_conv(p.shape, p.weight, p.bias, p.has_bias, p.epilogue, p.channels_last, threads);
  });
}

// ---- onednn_bf16: the same primitive multiplying in bfloat16 (ranked under --precision bf16)
std::string onednn_bf16_supports(const NodeView& v) {
  if (std::string r = bf16_unsupported_reason(); !r.empty()) return r;
  return onednn_supports(v);
}
// Rates measured at 1 thread in whole models (Zen 4 AVX512-BF16, oneDNN 2.6 brgconv, N,H,W,C;
// resnet50, vgg16, mobilenet_v2): ~205 GFLOP/s on kxk layers (vgg16's 3x3 at 224-28: 200-215,
// so Winograd F(4x4)'s ~260 effective stays ahead on large 3x3 maps), ~175 on 1x1, 13-32 on
// depthwise. With AMX tiles (Intel Xeon family 6 model 167 with AMX-BF16, 2026-11-29, the same
// models, ONEDNN_VERBOSE: brgconv on avx512_core_amx_bf16) the dense layers run 3-5x faster:
// 3x3 600-1230 GFLOP/s (VGG-16's 56x56 and 28x28 1040-1230, ResNet-50's 56x56x64 740-770),
// 1x1 300-600 on ResNet-50 (less where the map is large and the channels few: the conversion
// and the float32 output dominate); grouped layers stay on the AVX512-BF16 kernels (ResNeXt's 4
// and 8 channels per group 21-47) and depthwise on brdgmm_dw (12-33). The source is converted
// to bfloat16 at every run (4 bytes read, 2 written per element); on N,C,H,W tensors the output
// is reordered from the blocked layout as well.
double onednn_bf16_estimate(const NodeView& v) {
  ConvProblem p;
  read_conv_problem(v, &p, true);
  const ConvShape& s = p.shape;
  const double in = static_cast<double>(s.n * s.c * s.h * s.w), out = static_cast<double>(s.n * s.m * s.oh * s.ow);
  const double bytes = 6.0 * in + (p.channels_last ? 0.0 : 8.0 * out);
  const bool pointwise = s.kh * s.kw == 1;
  const bool amx = cpu_features().amx_bf16 && s.group == 1;
  const double gf =
      s.depthwise() ? 25 : amx ? (pointwise ? 700 : 1000) : (pointwise ? 175 : 205) * onednn_group_factor(s);
  return time_ms(s, v.threads, gf, 0.002) + bytes / (20e9 * v.threads) * 1e3;
}
std::unique_ptr<Kernel> onednn_bf16_prepare(const NodeView& v) {
  return prepare_conv(v, [](const ConvProblem& p, int threads) {
    return make_onednn_conv(p.shape, p.weight, p.bias, p.has_bias, p.epilogue, p.channels_last, threads, true);
  });
}

std::string need_avx512() { return cpu_features().avx512 ? "" : "needs AVX-512 (this CPU: " + cpu_features().isa + ")"; }

// ---- winograd (F(4x4,3x3)) and winograd_f2 (F(2x2,3x3))
template <int Tile>
std::string winograd_supports_node(const NodeView& v) {
  ConvProblem p;
  if (std::string r = read_conv_problem(v, &p); !r.empty()) return r;
  if (std::string r = avx2_fma_missing_reason(); !r.empty()) return r;
  if (std::string r = p.epilogue.simple_activation(); !r.empty()) return r;
  return winograd_supports(p.shape, Tile);
}
// Bf16 (winograd_bf16, winograd_f2_bf16): the GEMMs take half their float32 time, the transforms
// as long (plus the bf16 conversions): measured at 1 thread against the float32 kernel on the
// same layers (Zen 5, vgg11 and resnet50's 3x3 layers, F(4x4), 2026-11-28), 0.48-0.6x with 256
// or more input channels per group, 0.61-0.66x with 128, 0.68-0.71x with 64, 1.2x with 3 (the
// first layer).
template <int Tile, bool Bf16 = false>
double winograd_estimate(const NodeView& v) {
  ConvProblem p;
  read_conv_problem(v, &p);
  // Effective (direct-FLOP) rates measured at 1 thread; small maps leave few tiles to reuse
  // the transformed weights, which then stream from memory.
  const bool small = p.shape.oh * p.shape.ow < 14 * 14;
  double gf = Tile == 4 ? (small ? 110 : 260) : (small ? 150 : 200);
  if (!cpu_features().avx512) {
    // AVX2 (AMD Zen 3, 1 thread, resnet18's 3x3 layers in the model, 2026-11-27): F(4x4) at
    // 56x56 and 28x28 ~125 effective, 14x14 ~90, 7x7 (512 channels) ~57, where oneDNN's AVX2
    // kernel runs at ~80 on N,H,W,C (which its estimate rates 140); F(2x2) 70-80 at 56..14,
    // ~52 at 7x7. Scaled to the oneDNN estimate's 140.
    const bool medium = p.shape.oh * p.shape.ow < 28 * 28;
    gf = Tile == 4 ? (small ? 95 : medium ? 150 : 210) : (small ? 85 : 125);
    // Thin grouped layers fall further: RegNetY's 8 and RegNetX's 16 channels per group at
    // 28x28 (1 and 8 images) 27-31 and 45 GFLOP/s, 0.6-0.8 of the linear group factor's rate.
    if (thin_grouped(p.shape)) gf *= 0.7;
  }
  gf *= linear_group_factor(p.shape);
  if (Bf16) gf /= std::clamp(0.5 + 16.0 / static_cast<double>(p.shape.cg()), 0.5, 1.3);
  return time_ms(p.shape, v.threads, gf, 0.01);
}
template <int Tile, bool Bf16 = false>
std::unique_ptr<Kernel> winograd_prepare(const NodeView& v) {
  return prepare_conv(v, [](const ConvProblem& p, int threads) {
    return make_winograd_conv(p.shape, p.weight, p.bias, p.epilogue, Tile, threads, p.channels_last, Bf16);
  });
}

// ---- winograd_bf16 and winograd_f2_bf16: the same transforms, the GEMMs on bf16 pairs (ranked
// under --precision bf16)
template <int Tile>
std::string winograd_bf16_supports_node(const NodeView& v) {
  if (std::string r = winograd_bf16_unsupported_reason(); !r.empty()) return r;
  return winograd_supports_node<Tile>(v);
}

// ---- direct
std::string direct_supports_node(const NodeView& v) {
  ConvProblem p;
  if (std::string r = read_nchw_conv_problem(v, &p); !r.empty()) return r;
  if (std::string r = need_avx512(); !r.empty()) return r;
  if (std::string r = p.epilogue.simple_activation(); !r.empty()) return r;
  return direct_supports(p.shape);
}
double direct_estimate(const NodeView& v) {
  ConvProblem p;
  read_conv_problem(v, &p);
  const ConvShape& s = p.shape;
  // 16-wide output vectors along the width: narrow maps waste lanes (depthwise also loses
  // the row reuse, hence the square).
  const double lanes = std::min(1.0, static_cast<double>(s.ow) / static_cast<double>((s.ow + 15) / 16 * 16));
  const double gf = s.depthwise() ? 15 * lanes * lanes : (s.kh * s.kw == 1 ? 75 : 120) * lanes * (thin_grouped(s) ? 0.7 : 1.0);
  return time_ms(p.shape, v.threads, gf, 0.005);
}
std::unique_ptr<Kernel> direct_prepare(const NodeView& v) {
  return prepare_conv(v, [](const ConvProblem& p, int threads) {
    return make_direct_conv(p.shape, p.weight, p.bias, p.epilogue, threads);
  });
}

// ---- fft
std::string fft_supports_node(const NodeView& v) {
  ConvProblem p;
  if (std::string r = read_nchw_conv_problem(v, &p); !r.empty()) return r;
  return fft_supports(p.shape);
}
double fft_estimate(const NodeView& v) {
  ConvProblem p;
  read_conv_problem(v, &p);
  const ConvShape& s = p.shape;
  // Work does not grow with the kernel: transforms of C inputs and M outputs, and a complex
  // multiply-accumulate over the half spectrum for every (m, c) pair (rough 1-thread rates).
  const double fh = static_cast<double>(s.h + std::max(s.pad_top, s.pad_bottom));
  const double fw = static_cast<double>(s.w + std::max(s.pad_left, s.pad_right));
  const double spectrum = fh * (fw / 2 + 1);
  const double mac = 8.0 * s.n * s.m * s.cg() * spectrum / (15e9 * v.threads);
  const double fft = 5.0 * s.n * (s.c + s.m) * fh * fw * std::log2(fh * fw) / (10e9 * v.threads);
  return (mac + fft) * 1e3 + 0.02;
}
std::unique_ptr<Kernel> fft_prepare(const NodeView& v) {
  return prepare_conv(v, [](const ConvProblem& p, int threads) {
    return make_fft_conv(p.shape, p.weight, p.bias, p.epilogue, threads);
  });
}

// ---- im2col_gemm
std::string im2col_supports_node(const NodeView& v) {
  ConvProblem p;
  if (std::string r = read_nchw_conv_problem(v, &p); !r.empty()) return r;
  return im2col_gemm_supports(p.shape);
}
double im2col_estimate(const NodeView& v) {
  ConvProblem p;
  read_conv_problem(v, &p);
  // oneDNN's SGEMM plus writing and reading the im2col matrix (none for plain 1x1 layers). The
  // SGEMM packs the weights on every call, which keeps its rate in the models well below the
  // ~180 GFLOP/s it reaches on large pixel counts.
  const ConvShape& s = p.shape;
  const bool plain_1x1 = s.kh * s.kw == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_top + s.pad_left + s.pad_bottom + s.pad_right == 0;
  const double cols = plain_1x1 ? 0.0 : 4.0 * s.n * s.c * s.kh * s.kw * s.oh * s.ow;
  return time_ms(p.shape, v.threads, s.depthwise() ? 5 : 80 * linear_group_factor(s), 0.01) + 2 * cols / 10e9 * 1e3;
}
std::unique_ptr<Kernel> im2col_prepare(const NodeView& v) {
  return prepare_conv(v, [](const ConvProblem& p, int threads) {
    return make_im2col_gemm_conv(p.shape, p.weight, p.bias, p.epilogue, threads);
  });
}

// ---- implicit_gemm
std::string implicit_supports_node(const NodeView& v) {
  ConvProblem p;
  if (std::string r = read_nchw_conv_problem(v, &p); !r.empty()) return r;
  if (std::string r = need_avx512(); !r.empty()) return r;
  if (std::string r = p.epilogue.simple_activation(); !r.empty()) return r;
  return implicit_gemm_supports(p.shape);
}
double implicit_estimate(const NodeView& v) {
  ConvProblem p;
  read_conv_problem(v, &p);
  // 16-pixel vectors along the flattened output plane: small planes waste lanes.
  const double px = static_cast<double>(p.shape.oh * p.shape.ow);
  const double lanes = px / (std::ceil(px / 16.0) * 16.0) * (px < 400 ? 0.85 : 1.0);
  return time_ms(p.shape, v.threads, 105 * lanes * (thin_grouped(p.shape) ? 0.7 : 1.0), 0.005);
}
std::unique_ptr<Kernel> implicit_prepare(const NodeView& v) {
  return prepare_conv(v, [](const ConvProblem& p, int threads) {
    return make_implicit_gemm_conv(p.shape, p.weight, p.bias, p.epilogue, threads);
  });
}

// ---- grouped (N,H,W,C only)
std::string grouped_supports_node(const NodeView& v) {
  ConvProblem p;
  if (std::string r = read_conv_problem(v, &p); !r.empty()) return r;
  if (!p.channels_last) return "computes N,H,W,C tensors only (a channels_last node)";
  if (std::string r = avx2_fma_missing_reason(); !r.empty()) return r;
  if (std::string r = p.epilogue.simple_activation(); !r.empty()) return r;
  return grouped_nhwc_supports(p.shape);
}
// The same layers as oneDNN's rates above (nhwc_kxk_gflops): 22-30 GFLOP/s with 8 output
// channels per group at batch 1 and 17-36 at batch 8 (one vector of outputs per broadcast input
// value), 47-62 and 35-58 with 16 (two vectors per broadcast); with fewer than 8 input
// channels per group assumed slower in proportion (not measured: no zoo model has them). Measured
// on AVX2 only: on CPUs with AVX-512 oneDNN's grouped kernels are rated above it.
double grouped_estimate(const NodeView& v) {
  ConvProblem p;
  read_conv_problem(v, &p);
  const ConvShape& s = p.shape;
  const double gf = 30.0 * std::min(2.0, static_cast<double>(s.mg()) / 8.0) * std::min(1.0, static_cast<double>(s.cg()) / 8.0);
  return time_ms(s, v.threads, gf, 0.003);
}
std::unique_ptr<Kernel> grouped_prepare(const NodeView& v) {
  return prepare_conv(v, [](const ConvProblem& p, int) {
    return make_grouped_nhwc_conv(p.shape, p.weight, p.bias, p.epilogue);
  });
}

// ---- implicit_nhwc (N,H,W,C only)
std::string implicit_nhwc_supports_node(const NodeView& v) {
  ConvProblem p;
  if (std::string r = read_conv_problem(v, &p); !r.empty()) return r;
  if (!p.channels_last) return "computes N,H,W,C tensors only (a channels_last node)";
  if (std::string r = avx2_fma_missing_reason(); !r.empty()) return r;
  if (std::string r = p.epilogue.simple_activation(); !r.empty()) return r;
  return implicit_nhwc_supports(p.shape);
}
// Measured on the layers of resnet50 and inception_v3 at batch 1, 1 thread, each run on both
// this and oneDNN (AVX2, Zen 3, 2026-11-28), in the units of the oneDNN estimate (whose 140 is
// ~80 real GFLOP/s): kxk layers with 16 or more input channels ran at 62-75 real GFLOP/s
// whatever the stride and size (~125 here); 1x1 layers 0.95-1.4x oneDNN's time; with fewer than
// 16 input channels (a first layer: rows packed from 3 channels) 1.3-1.8x. Not measured with
// AVX-512, where oneDNN's kernels are rated above it.
double implicit_nhwc_estimate(const NodeView& v) {
  ConvProblem p;
  read_conv_problem(v, &p);
  const ConvShape& s = p.shape;
  double gf = s.kh * s.kw == 1 ? 0.9 * 145 : s.c < 16 ? 0.6 * nhwc_kxk_gflops(s) : 125;
  if (cpu_features().avx512) gf = std::min(gf, 0.5 * nhwc_kxk_gflops(s));
  return time_ms(s, v.threads, gf, 0.002);
}
std::unique_ptr<Kernel> implicit_nhwc_prepare(const NodeView& v) {
  return prepare_conv(v, [](const ConvProblem& p, int threads) {
    return make_implicit_nhwc_conv(p.shape, p.weight, p.bias, p.epilogue, threads);
  });
}

}  // namespace

std::string implicit_nhwc_supports(const ConvShape& s) {
  return s.group == 1 ? "" : "a grouped convolution (grouped and onednn compute those)";
}

std::string grouped_nhwc_supports(const ConvShape& s) {
  if (s.group <= 1 || s.depthwise()) return "not a grouped convolution (group > 1, not depthwise)";
  if (s.mg() % 8 != 0) return "output channels per group not a multiple of 8";
  return "";
}

extern const Algorithm kConvGrouped;
const Algorithm kConvGrouped{"conv", "grouped",
                             "thin grouped convs on N,H,W,C: 8 output channels of a group per AVX2 vector",
                             grouped_supports_node, grouped_estimate, grouped_prepare};
extern const Algorithm kConvImplicitNhwc;
const Algorithm kConvImplicitNhwc{"conv", "implicit_nhwc",
                                  "dense convs on N,H,W,C as an implicit GEMM: 6 pixels x 16 channels per AVX2 tile",
                                  implicit_nhwc_supports_node, implicit_nhwc_estimate, implicit_nhwc_prepare};
extern const Algorithm kConvIm2colGemm;
const Algorithm kConvIm2colGemm{"conv", "im2col_gemm", "explicit im2col + oneDNN SGEMM on the pool (1x1: plain GEMM)",
                                im2col_supports_node, im2col_estimate, im2col_prepare};
extern const Algorithm kConvImplicitGemm;
const Algorithm kConvImplicitGemm{"conv", "implicit_gemm",
                                  "GEMM without im2col: packed weight panels, AVX-512 micro-kernel on NCHW",
                                  implicit_supports_node, implicit_estimate, implicit_prepare};
extern const Algorithm kConvDirect;
const Algorithm kConvDirect{"conv", "direct", "direct loops, AVX-512 register tiles (depthwise 3x3/5x5 fast path)",
                            direct_supports_node, direct_estimate, direct_prepare};
extern const Algorithm kConvFft;
const Algorithm kConvFft{"conv", "fft", "FFTW r2c/c2r, frequency-domain accumulation (stride 1; error <= 1e-3)",
                         fft_supports_node, fft_estimate, fft_prepare};
extern const Algorithm kConvWinograd;
const Algorithm kConvWinograd{"conv", "winograd", "Winograd F(4x4,3x3), AVX-512 or AVX2 (3x3 stride 1; error <= 1e-3)",
                              winograd_supports_node<4>, winograd_estimate<4>, winograd_prepare<4>};
extern const Algorithm kConvWinogradF2;
const Algorithm kConvWinogradF2{"conv", "winograd_f2", "Winograd F(2x2,3x3), AVX-512 or AVX2 (3x3 stride 1)",
                                winograd_supports_node<2>, winograd_estimate<2>, winograd_prepare<2>};

extern const Algorithm kConvWinogradBf16;
const Algorithm kConvWinogradBf16{"conv", "winograd_bf16",
                                  "Winograd F(4x4,3x3) with bfloat16 GEMMs (AVX512-BF16; --precision bf16)",
                                  winograd_bf16_supports_node<4>, winograd_estimate<4, true>, winograd_prepare<4, true>,
                                  /*on_request_only=*/true};
extern const Algorithm kConvWinogradF2Bf16;
const Algorithm kConvWinogradF2Bf16{"conv", "winograd_f2_bf16",
                                    "Winograd F(2x2,3x3) with bfloat16 GEMMs (AVX512-BF16; --precision bf16)",
                                    winograd_bf16_supports_node<2>, winograd_estimate<2, true>,
                                    winograd_prepare<2, true>, /*on_request_only=*/true};

extern const Algorithm kConvOnednn;
const Algorithm kConvOnednn{"conv", "onednn", "oneDNN convolution primitive (blocked layouts, fused post-ops)",
                            onednn_supports, onednn_estimate, onednn_prepare};
extern const Algorithm kConvOnednnBf16;
const Algorithm kConvOnednnBf16{"conv", "onednn_bf16",
                                "oneDNN convolution primitive in bfloat16 (float32 sums and output; --precision bf16)",
                                onednn_bf16_supports, onednn_bf16_estimate, onednn_bf16_prepare, /*on_request_only=*/true};

}  // namespace joule::kernels
