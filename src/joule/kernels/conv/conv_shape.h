#pragma once
// The concrete problem every FP32 convolution algorithm solves: a 2-D convolution (1-D convs
// are mapped to H = 1) over NCHW float tensors with groups, strides, dilations and explicit
// pads, followed by an epilogue y = act(conv + bias[m] + residual). Algorithms are classes
// built once per node (weights packed / transformed in the constructor, scratch allocated
// there too) whose const run() never allocates.
#include <algorithm>
#include <cstdint>
#include <string>

#include "joule/core/thread_pool.h"
#include "joule/ops/vec_math.h"

namespace joule::kernels {

struct ConvShape {
  int64_t n = 1, c = 1, h = 1, w = 1;  // input [N, C, H, W]
  int64_t m = 1;                       // output channels
  int64_t group = 1;                   // C % group == 0, M % group == 0
  int64_t kh = 1, kw = 1;              // kernel
  int64_t stride_h = 1, stride_w = 1;
  int64_t dil_h = 1, dil_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t oh = 1, ow = 1;              // output spatial size (consistent with the above)

  int64_t cg() const { return c / group; }  // input channels per group
  int64_t mg() const { return m / group; }  // output channels per group
  bool depthwise() const { return group == c && group == m; }
  double macs() const {
    return static_cast<double>(n) * m * oh * ow * cg() * kh * kw;
  }
  // Computes oh / ow from the rest (floor mode). Returns false when the kernel does not fit.
  bool compute_output() {
    const int64_t eh = (kh - 1) * dil_h + 1, ew = (kw - 1) * dil_w + 1;
    const int64_t sh = h + pad_top + pad_bottom - eh, sw = w + pad_left + pad_right - ew;
    if (sh < 0 || sw < 0) return false;
    oh = sh / stride_h + 1;
    ow = sw / stride_w + 1;
    return true;
  }
  std::string str() const;  // "N1 C64 H56 W56 -> M64 k3x3 s1x1 d1x1 p1,1,1,1 g1"
};

// The last three run in the onednn, im2col_gemm and fft algorithms only (vectorised in oneDNN's
// post-ops; per element through apply() in the others).
enum class Activation { kNone, kRelu, kClip, kLeakyRelu, kSigmoid, kSilu, kHardSwish };

// y = act(acc + bias[m] + residual) where residual (same shape as y) is optional.
struct Epilogue {
  Activation act = Activation::kNone;
  float alpha = 0.f;  // Clip: min; LeakyRelu: slope
  float beta = 0.f;   // Clip: max
  bool residual = false;

  float apply(float v) const {
    switch (act) {
      case Activation::kNone: return v;
      case Activation::kRelu: return v < 0.f ? 0.f : v;  // NaN stays NaN (as PyTorch)
      case Activation::kClip: return std::min(std::max(v, alpha), beta);
      case Activation::kLeakyRelu: return v >= 0.f ? v : v * alpha;
      case Activation::kSigmoid: return ops::vec::sigmoid(v);
      case Activation::kSilu: return v * ops::vec::sigmoid(v);
      case Activation::kHardSwish: return v * std::min(std::max(v / 6.f + 0.5f, 0.f), 1.f);
    }
    return v;
  }
  // "" when the activation is one the hand-written AVX-512 kernels (direct, implicit_gemm,
  // winograd) apply, else why not.
  std::string simple_activation() const {
    return act <= Activation::kLeakyRelu ? "" : "a Sigmoid/SiLU/HardSwish epilogue (onednn, im2col_gemm and fft apply it)";
  }
  // Applies bias, residual and activation in place to `count` contiguous outputs of one
  // output channel, as apply() does, vectorised per activation (AVX-512 where the CPU has it).
  // `res` is null when there is no residual.
  void finish(float* y, const float* res, int64_t count, float bias) const;
};

// An algorithm instance bound to one shape and one set of weights.
class ConvKernel {
 public:
  virtual ~ConvKernel() = default;
  // x: [N,C,H,W]; residual: [N,M,OH,OW] or null (must be non-null iff epilogue.residual);
  // y: [N,M,OH,OW]. Must not allocate; may use scratch made in the constructor.
  virtual void run(const float* x, const float* residual, float* y, ThreadPool& pool) const = 0;
  // The same with the weights (and bias, null when none) given at run time, for kernels made
  // without them (ConvProblem::runtime_weights: training, where the weights change every step).
  virtual void run_weights(const float* x, const float* weight, const float* bias, const float* residual, float* y,
                           ThreadPool& pool) const;
  // Optional: what actually runs (e.g. the vendor library's implementation name).
  virtual std::string detail() const { return ""; }
  // True when run() computes the right output with residual == y (the session then lets a
  // residual that nothing reads afterwards hold the output).
  virtual bool residual_in_place() const { return false; }
};

}  // namespace joule::kernels
