#pragma once
// joule's own CUDA kernels (kernels.cu), called by the GPU algorithms (algorithms_cuda.cpp).
// Plain pointers and sizes: no joule types cross into device code. Every launcher enqueues on
// `stream` and returns at once. Activations (and the parameters stored with them) are of the
// element type `e` (float32, float16 or bfloat16; arithmetic in float32 throughout); `float*`
// parameters are float32 whatever `e` is.
#include <cstdint>

#include <cuda_runtime.h>

namespace joule::cuda::k {

inline constexpr int kMaxRank = 8;

// The storage type of a kernel's activations.
enum class Elt : int { F32, F16, BF16 };

// y[i] = x[i] converted (float32 <-> float16 <-> bfloat16, round to nearest even).
void cast(const void* x, Elt from, void* y, Elt to, int64_t n, cudaStream_t s);

// Activations of fused epilogues and unary ops. a, b: LeakyRelu/Elu/Celu alpha, Clip min/max,
// HardSigmoid alpha/beta.
enum class Act : int {
  None, Relu, LeakyRelu, Clip, Sigmoid, SiLU, HardSwish, Gelu, GeluTanh, Tanh, Exp, Log, Sqrt, Neg, Abs, Erf,
  HardSigmoid, Softplus, Reciprocal, Floor, Ceil, Sin, Cos, Elu, Celu, Softsign, Round, Sign, Mish
};

// y[i] = act(y[i] + bias[(i / inner) % channels] + z[i]); bias and z may be null.
void epilogue(void* y, const void* bias, const void* z, int64_t n, int64_t channels, int64_t inner, Act act,
              float a, float b, Elt e, cudaStream_t s);
// y[i] = x[i] * scale[c] + shift[c], c = (i / inner) % channels (inference BatchNormalization).
void channel_affine(const void* x, void* y, const float* scale, const float* shift, int64_t n, int64_t channels,
                    int64_t inner, Elt e, cudaStream_t s);
void unary(const void* x, void* y, int64_t n, Act act, float a, float b, Elt e, cudaStream_t s);

enum class Bin : int { Add, Sub, Mul, Div, Pow, Max, Min, PRelu };
// Broadcasting: the output has `rank` dims `out`; sa/sb are the inputs' element strides per
// output dim (0 where broadcast). `flat` true: a, b and y are all the same shape (no strides).
struct Broadcast {
  int rank = 0;
  int64_t out[kMaxRank] = {};
  int64_t sa[kMaxRank] = {};
  int64_t sb[kMaxRank] = {};
};
void binary(const void* a, const void* b, void* y, int64_t n, Bin op, const Broadcast& bc, bool flat, Elt e, cudaStream_t s);

// A strided copy of `elem` bytes per element: y[i] (contiguous, dims `out`) = x[offset + sum
// idx_d * stride[d]] when gather; y[offset + sum idx_d * stride[d]] = x[i] (contiguous) when not.
// Transpose, Slice, Expand, Concat (one per input), Split all are one of these.
struct Strided {
  int rank = 0;
  int64_t out[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
  int64_t offset = 0;
};
void strided_copy(const void* x, void* y, int elem, int64_t n, const Strided& st, bool gather, cudaStream_t s);

// Gather along an axis: x is [outer, axis_dim, inner], idx (int64 or int32, negative counts from
// the end) has n_idx values; y[o, j, i] = x[o, idx[j], i].
void gather(const void* x, const void* idx, bool idx64, void* y, int elem, int64_t outer, int64_t axis_dim,
            int64_t inner, int64_t n_idx, cudaStream_t s);

// Reduction of x [outer, red, inner] over red into y [outer, inner]: mean, sum, max, min, or the
// sum of squares (L2 needs its sqrt: `root`).
enum class Red : int { Mean, Sum, Max, Min, SumSquare, L1 };
void reduce(const void* x, void* y, int64_t outer, int64_t red, int64_t inner, Red op, bool root, Elt e, cudaStream_t s);

// Softmax (or LogSoftmax) of x [outer, red, inner] along red.
void softmax(const void* x, void* y, int64_t outer, int64_t red, int64_t inner, bool log, Elt e, cudaStream_t s);
// LayerNormalization of rows of `cols`: y = (x - mean) / sqrt(var + eps) * scale + bias (bias may be null).
void layer_norm(const void* x, void* y, const void* scale, const void* bias, int64_t rows, int64_t cols,
                float eps, Elt e, cudaStream_t s);

// 2-D pooling of NCHW x into y [N, C, OH, OW]; ph/pw the top/left pads, ph_end/pw_end the
// bottom/right ones. Average: `count_pad` includes padded cells (not ceil_mode overhang) in the divisor.
struct Pool2d {
  int64_t n = 0, c = 0, h = 0, w = 0, oh = 0, ow = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, ph_end = 0, pw_end = 0, dh = 1, dw = 1;
  bool max = true, count_pad = false;
};
void pool2d(const void* x, void* y, const Pool2d& p, Elt e, cudaStream_t s);

// Depthwise 2-D convolution (one filter per channel, N,C,H,W) with the fused epilogue:
// y = act(conv(x, w) + bias[c] + z). w is [C, 1, kh, kw]; bias and z may be null.
struct Depthwise {
  int64_t n = 0, c = 0, h = 0, w = 0, oh = 0, ow = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
};
void depthwise(const void* x, const void* w, const void* bias, const void* z, void* y, const Depthwise& p, Act act,
               float a, float b, Elt e, cudaStream_t s);

}  // namespace joule::cuda::k
