// joule's own CUDA kernels: fused epilogues, elementwise math with broadcasting, strided copies
// (transpose, slice, concat, expand), gather, reductions, softmax, layer norm and pooling.
// Grid-stride loops over 64-bit indices; one warp per row where a row is reduced (softmax,
// layer norm, reductions over contiguous rows), a block-wide tree otherwise. Every kernel that
// reads activations is a template over their storage type T (float, __half, __nv_bfloat16):
// loaded to float (f32), computed in float, rounded once when stored (to<T>).
#include <cfloat>
#include <cmath>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "joule/cuda/kernels.h"

namespace joule::cuda::k {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float f32(float v) { return v; }
__device__ __forceinline__ float f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float f32(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T>
__device__ __forceinline__ T to(float v);
template <>
__device__ __forceinline__ float to<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half to<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 to<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// 16 bytes of T, loaded and stored whole (4 floats, 8 halves) where every pointer of a launch is
// 16-byte aligned and the elements divide: elementwise kernels are bound by memory, and one
// 2-byte access per thread leaves most of it idle.
template <class T>
struct alignas(16) Pack {
  static constexpr int kN = 16 / sizeof(T);
  T v[kN];
};
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// f(T{}) with T the storage type of `e` (host side: picks the template instance to launch).
template <class F>
void by_elt(Elt e, F&& f) {
  switch (e) {
    case Elt::F16: f(__half{}); break;
    case Elt::BF16: f(__nv_bfloat16{}); break;
    default: f(float{}); break;
  }
}

inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

__device__ __forceinline__ float apply(Act act, float v, float a, float b) {
  switch (act) {
    case Act::None: return v;
    case Act::Relu: return v < 0.f ? 0.f : v;  // NaN stays NaN
    case Act::LeakyRelu: return v >= 0.f ? v : v * a;
    case Act::Clip: return v != v ? v : fminf(fmaxf(v, a), b);  // fminf/fmaxf drop NaN
    case Act::Sigmoid: return 1.f / (1.f + expf(-v));
    case Act::SiLU: return v / (1.f + expf(-v));
    case Act::HardSwish: return v * fminf(fmaxf(v / 6.f + 0.5f, 0.f), 1.f);
    case Act::Gelu: return 0.5f * v * (1.f + erff(v * 0.7071067811865476f));
    case Act::GeluTanh: return 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    case Act::Tanh: return tanhf(v);
    case Act::Exp: return expf(v);
    case Act::Log: return logf(v);
    case Act::Sqrt: return sqrtf(v);
    case Act::Neg: return -v;
    case Act::Abs: return fabsf(v);
    case Act::Erf: return erff(v);
    case Act::HardSigmoid: return v != v ? v : fminf(fmaxf(a * v + b, 0.f), 1.f);
    case Act::Softplus: return v > 20.f ? v : log1pf(expf(v));
    case Act::Reciprocal: return 1.f / v;
    case Act::Floor: return floorf(v);
    case Act::Ceil: return ceilf(v);
    case Act::Sin: return sinf(v);
    case Act::Cos: return cosf(v);
    case Act::Elu: return v >= 0.f ? v : a * (expf(v) - 1.f);
    case Act::Celu: return fmaxf(0.f, v) + fminf(0.f, a * (expf(v / a) - 1.f));
    case Act::Softsign: return v / (1.f + fabsf(v));
    case Act::Round: return rintf(v);
    case Act::Sign: return v > 0.f ? 1.f : v < 0.f ? -1.f : v;
    case Act::Mish: return v * tanhf(v > 20.f ? v : log1pf(expf(v)));
  }
  return v;
}

template <class T>
__global__ void epilogue_k(T* y, const T* bias, const T* z, int64_t n, int64_t channels, int64_t inner, Act act, float a,
                           float b) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = f32(y[i]);
    if (bias) v += f32(bias[(i / inner) % channels]);
    if (z) v += f32(z[i]);
    y[i] = to<T>(apply(act, v, a, b));
  }
}

template <class T>
__global__ void affine_k(const T* x, T* y, const float* scale, const float* shift, int64_t n, int64_t channels,
                         int64_t inner) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = (i / inner) % channels;
    y[i] = to<T>(f32(x[i]) * scale[c] + shift[c]);
  }
}

template <class T>
__global__ void unary_k(const T* x, T* y, int64_t n, Act act, float a, float b) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = to<T>(apply(act, f32(x[i]), a, b));
}

// Packs of elements [i * kN, (i + 1) * kN); `bias` is per channel: with inner == 1 the pack's
// channels are consecutive (channels divide by kN), else one channel for the pack (inner divides).
template <class T, class I>
__global__ void epilogue_pack_k(Pack<T>* y, const T* bias, const Pack<T>* z, I packs, I channels, I inner, Act act, float a,
                                float b) {
  constexpr int kN = Pack<T>::kN;
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < packs; i += static_cast<I>(gridDim.x) * blockDim.x) {
    Pack<T> v = y[i];
    Pack<T> zz;
    if (z) zz = z[i];
    const I first = i * kN;
    const I c0 = inner == 1 ? first % channels : (first / inner) % channels;
#pragma unroll
    for (int j = 0; j < kN; ++j) {
      float f = f32(v.v[j]);
      if (bias) f += f32(bias[inner == 1 ? c0 + j : c0]);
      if (z) f += f32(zz.v[j]);
      v.v[j] = to<T>(apply(act, f, a, b));
    }
    y[i] = v;
  }
}

template <class T>
__global__ void unary_pack_k(const Pack<T>* x, Pack<T>* y, int64_t packs, Act act, float a, float b) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < packs;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Pack<T> v = x[i];
#pragma unroll
    for (int j = 0; j < Pack<T>::kN; ++j) v.v[j] = to<T>(apply(act, f32(v.v[j]), a, b));
    y[i] = v;
  }
}

template <class T, class I>
__global__ void affine_pack_k(const Pack<T>* x, Pack<T>* y, const float* scale, const float* shift, I packs, I channels,
                              I inner) {
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < packs; i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I c = (i * Pack<T>::kN / inner) % channels;
    const float k = scale[c], m = shift[c];
    Pack<T> v = x[i];
#pragma unroll
    for (int j = 0; j < Pack<T>::kN; ++j) v.v[j] = to<T>(f32(v.v[j]) * k + m);
    y[i] = v;
  }
}

template <class Ti, class To>
__global__ void cast_k(const Ti* x, To* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = to<To>(f32(x[i]));
}

__device__ __forceinline__ float bin(Bin op, float x, float y) {
  switch (op) {
    case Bin::Add: return x + y;
    case Bin::Sub: return x - y;
    case Bin::Mul: return x * y;
    case Bin::Div: return x / y;
    case Bin::Pow: return powf(x, y);
    case Bin::Max: return (x != x || y != y) ? x + y : fmaxf(x, y);
    case Bin::Min: return (x != x || y != y) ? x + y : fminf(x, y);
    case Bin::PRelu: return x >= 0.f ? x : x * y;
  }
  return x;
}

template <class T>
__global__ void binary_flat_k(const T* a, const T* b, T* y, int64_t n, Bin op) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = to<T>(bin(op, f32(a[i]), f32(b[i])));
}
// Same-shape operands in packs, or one of them a single value (`scalar`: 1 a, 2 b).
template <class T>
__global__ void binary_pack_k(const T* a, const T* b, Pack<T>* y, int64_t packs, Bin op, int scalar) {
  const float sa = scalar == 1 ? f32(a[0]) : 0.f, sb = scalar == 2 ? f32(b[0]) : 0.f;
  const Pack<T>* pa = reinterpret_cast<const Pack<T>*>(a);
  const Pack<T>* pb = reinterpret_cast<const Pack<T>*>(b);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < packs;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    Pack<T> va, vb, o;
    if (scalar != 1) va = pa[i];
    if (scalar != 2) vb = pb[i];
#pragma unroll
    for (int j = 0; j < Pack<T>::kN; ++j)
      o.v[j] = to<T>(bin(op, scalar == 1 ? sa : f32(va.v[j]), scalar == 2 ? sb : f32(vb.v[j])));
    y[i] = o;
  }
}

// I: the index type; 32-bit where every index fits (integer division costs a third of 64-bit's).
template <class T, class I>
__global__ void binary_bc_k(const T* a, const T* b, T* y, I n, Bin op, Broadcast bc) {
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < n; i += static_cast<I>(gridDim.x) * blockDim.x) {
    I r = i, ia = 0, ib = 0;
    for (int d = bc.rank - 1; d >= 0; --d) {
      const I dim = static_cast<I>(bc.out[d]);
      const I idx = r % dim;
      r /= dim;
      ia += idx * static_cast<I>(bc.sa[d]);
      ib += idx * static_cast<I>(bc.sb[d]);
    }
    y[i] = to<T>(bin(op, f32(a[ia]), f32(b[ib])));
  }
}

template <class T, class I>
__global__ void strided_k(const T* __restrict__ x, T* __restrict__ y, I n, Strided st, bool gather) {
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < n; i += static_cast<I>(gridDim.x) * blockDim.x) {
    I r = i, off = static_cast<I>(st.offset);
    for (int d = st.rank - 1; d >= 0; --d) {
      const I dim = static_cast<I>(st.out[d]);
      off += (r % dim) * static_cast<I>(st.stride[d]);
      r /= dim;
    }
    if (gather)
      y[i] = x[off];
    else
      y[off] = x[i];
  }
}

template <class T, class Ix, class I>
__global__ void gather_k(const T* __restrict__ x, const Ix* idx, T* __restrict__ y, I outer, I axis_dim, I inner, I n_idx) {
  const I n = outer * n_idx * inner;
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < n; i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I in = i % inner;
    const I j = (i / inner) % n_idx;
    const I o = i / (inner * n_idx);
    I k = static_cast<I>(idx[j]);
    if (k < 0) k += axis_dim;
    y[i] = (k >= 0 && k < axis_dim) ? x[(o * axis_dim + k) * inner + in] : T{};
  }
}

__device__ __forceinline__ float red_init(Red op) {
  return op == Red::Max ? -INFINITY : op == Red::Min ? INFINITY : 0.f;
}
__device__ __forceinline__ float red_step(Red op, float acc, float v) {
  switch (op) {
    case Red::Max: return (v != v || acc != acc) ? v + acc : fmaxf(acc, v);
    case Red::Min: return (v != v || acc != acc) ? v + acc : fminf(acc, v);
    case Red::SumSquare: return acc + v * v;
    case Red::L1: return acc + fabsf(v);
    default: return acc + v;
  }
}
__device__ __forceinline__ float red_merge(Red op, float a, float b) {
  if (op == Red::Max) return (a != a || b != b) ? a + b : fmaxf(a, b);
  if (op == Red::Min) return (a != a || b != b) ? a + b : fminf(a, b);
  return a + b;
}
__device__ __forceinline__ float warp_merge(Red op, float v) {
  for (int o = 16; o > 0; o >>= 1) v = red_merge(op, v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Block-wide merge (all threads get the result); blockDim.x a multiple of 32, <= 1024.
__device__ float block_merge(Red op, float v) {
  __shared__ float part[32];
  v = warp_merge(op, v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  const int warps = blockDim.x >> 5;
  v = lane < warps ? part[lane] : red_init(op);
  v = warp_merge(op, v);
  return v;
}

// One block per output row when inner == 1 (contiguous reduction); else one thread per output.
template <class T>
__global__ void reduce_rows_k(const T* x, T* y, int64_t red, Red op, bool root, bool mean) {
  const T* row = x + blockIdx.x * red;
  float acc = red_init(op);
  for (int64_t i = threadIdx.x; i < red; i += blockDim.x) acc = red_step(op, acc, f32(row[i]));
  acc = block_merge(op, acc);
  if (threadIdx.x == 0) {
    if (mean) acc /= static_cast<float>(red);
    if (root) acc = sqrtf(acc);
    y[blockIdx.x] = to<T>(acc);
  }
}
template <class T>
__global__ void reduce_strided_k(const T* x, T* y, int64_t outer, int64_t red, int64_t inner, Red op, bool root,
                                 bool mean) {
  const int64_t n = outer * inner;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = i / inner, in = i % inner;
    const T* p = x + o * red * inner + in;
    float acc = red_init(op);
    for (int64_t r = 0; r < red; ++r) acc = red_step(op, acc, f32(p[r * inner]));
    if (mean) acc /= static_cast<float>(red);
    if (root) acc = sqrtf(acc);
    y[i] = to<T>(acc);
  }
}

// The threads that share a row of softmax or layer norm: the whole block (long rows), or a warp
// (rows of up to a few thousand: attention scores), eight rows per block, with no shared memory or
// block barriers; the second and third reads of a row come from L1.
struct BlockRow {
  int64_t tid = threadIdx.x, step = blockDim.x;
  __device__ float merge(Red op, float v) const { return block_merge(op, v); }
};
struct WarpRow {
  int64_t tid = threadIdx.x & 31, step = 32;
  __device__ float merge(Red op, float v) const { return warp_merge(op, v); }
};
// The row of the calling warp, eight (blockDim / 32) rows per block.
__device__ __forceinline__ int64_t warp_row() { return blockIdx.x * static_cast<int64_t>(blockDim.x >> 5) + (threadIdx.x >> 5); }

template <class T, class G>
__device__ void softmax_row(const T* row, T* out, int64_t red, bool log, G g) {
  float m = -INFINITY;
  for (int64_t i = g.tid; i < red; i += g.step) m = fmaxf(m, f32(row[i]));
  m = g.merge(Red::Max, m);
  float sum = 0.f;
  for (int64_t i = g.tid; i < red; i += g.step) sum += expf(f32(row[i]) - m);
  sum = g.merge(Red::Sum, sum);
  if (log) {
    const float ls = logf(sum);
    for (int64_t i = g.tid; i < red; i += g.step) out[i] = to<T>(f32(row[i]) - m - ls);
  } else {
    const float inv = 1.f / sum;
    for (int64_t i = g.tid; i < red; i += g.step) out[i] = to<T>(expf(f32(row[i]) - m) * inv);
  }
}
template <class T>
__global__ void softmax_rows_k(const T* x, T* y, int64_t red, bool log) {
  softmax_row(x + blockIdx.x * red, y + blockIdx.x * red, red, log, BlockRow());
}
template <class T>
__global__ void softmax_warp_k(const T* x, T* y, int64_t rows, int64_t red, bool log) {
  const int64_t r = warp_row();
  if (r < rows) softmax_row(x + r * red, y + r * red, red, log, WarpRow());
}

template <class T>
__global__ void softmax_strided_k(const T* x, T* y, int64_t outer, int64_t red, int64_t inner, bool log) {
  const int64_t n = outer * inner;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = i / inner, in = i % inner;
    const T* p = x + o * red * inner + in;
    T* q = y + o * red * inner + in;
    float m = -INFINITY;
    for (int64_t r = 0; r < red; ++r) m = fmaxf(m, f32(p[r * inner]));
    float sum = 0.f;
    for (int64_t r = 0; r < red; ++r) sum += expf(f32(p[r * inner]) - m);
    const float ls = logf(sum), inv = 1.f / sum;
    for (int64_t r = 0; r < red; ++r) {
      const float v = f32(p[r * inner]) - m;
      q[r * inner] = to<T>(log ? v - ls : expf(v) * inv);
    }
  }
}

// Two passes over the row (mean, then centred variance) for the accuracy of PyTorch's.
template <class T, class G>
__device__ void layer_norm_row(const T* row, T* out, const T* scale, const T* bias, int64_t cols, float eps, G g) {
  float s = 0.f;
  for (int64_t i = g.tid; i < cols; i += g.step) s += f32(row[i]);
  const float mean = g.merge(Red::Sum, s) / static_cast<float>(cols);
  float v = 0.f;
  for (int64_t i = g.tid; i < cols; i += g.step) {
    const float d = f32(row[i]) - mean;
    v += d * d;
  }
  const float inv = rsqrtf(g.merge(Red::Sum, v) / static_cast<float>(cols) + eps);
  for (int64_t i = g.tid; i < cols; i += g.step)
    out[i] = to<T>((f32(row[i]) - mean) * inv * f32(scale[i]) + (bias ? f32(bias[i]) : 0.f));
}
template <class T>
__global__ void layer_norm_k(const T* x, T* y, const T* scale, const T* bias, int64_t cols, float eps) {
  layer_norm_row(x + blockIdx.x * cols, y + blockIdx.x * cols, scale, bias, cols, eps, BlockRow());
}
template <class T>
__global__ void layer_norm_warp_k(const T* x, T* y, const T* scale, const T* bias, int64_t rows, int64_t cols, float eps) {
  const int64_t r = warp_row();
  if (r < rows) layer_norm_row(x + r * cols, y + r * cols, scale, bias, cols, eps, WarpRow());
}

template <class T>
__global__ void pool2d_k(const T* x, T* y, Pool2d p) {
  const int64_t n = p.n * p.c * p.oh * p.ow;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, nc = i / (p.ow * p.oh);
    const T* plane = x + nc * p.h * p.w;
    const int64_t y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
    float acc = p.max ? -INFINITY : 0.f;
    int cnt = 0;
    for (int ky = 0; ky < p.kh; ++ky) {
      const int64_t yy = y0 + ky * p.dh;
      for (int kx = 0; kx < p.kw; ++kx) {
        const int64_t xx = x0 + kx * p.dw;
        const bool in = yy >= 0 && yy < p.h && xx >= 0 && xx < p.w;
        if (p.max) {
          if (in) {
            const float v = f32(plane[yy * p.w + xx]);
            acc = (v != v || v > acc) ? v : acc;
          }
        } else {
          if (in) {
            acc += f32(plane[yy * p.w + xx]);
            ++cnt;
          } else if (p.count_pad && yy >= -p.ph && yy < p.h + p.ph_end && xx >= -p.pw && xx < p.w + p.pw_end) {
            ++cnt;  // a cell of the padding (not of a ceil_mode overhang)
          }
        }
      }
    }
    y[i] = to<T>(p.max ? acc : (cnt ? acc / static_cast<float>(cnt) : 0.f));
  }
}

template <class T>
__global__ void depthwise_k(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                            const T* __restrict__ z, T* __restrict__ y, Depthwise p, Act act, float a, float b) {
  const int64_t n = p.n * p.c * p.oh * p.ow;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, nc = i / (p.ow * p.oh), c = nc % p.c;
    const T* plane = x + nc * p.h * p.w;
    const T* f = w + c * p.kh * p.kw;
    const int64_t y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
    float acc = 0.f;
    for (int ky = 0; ky < p.kh; ++ky) {
      const int64_t yy = y0 + ky * p.dh;
      if (yy < 0 || yy >= p.h) continue;
      for (int kx = 0; kx < p.kw; ++kx) {
        const int64_t xx = x0 + kx * p.dw;
        if (xx >= 0 && xx < p.w) acc = fmaf(f32(plane[yy * p.w + xx]), f32(f[ky * p.kw + kx]), acc);
      }
    }
    if (bias) acc += f32(bias[c]);
    if (z) acc += f32(z[i]);
    y[i] = to<T>(apply(act, acc, a, b));
  }
}

}  // namespace

void cast(const void* x, Elt from, void* y, Elt to_e, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  by_elt(from, [&](auto ti) {
    using Ti = decltype(ti);
    by_elt(to_e, [&](auto tt) {
      using To = decltype(tt);
      cast_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const Ti*>(x), static_cast<To*>(y), n);
    });
  });
}

void depthwise(const void* x, const void* w, const void* bias, const void* z, void* y, const Depthwise& p, Act act,
               float a, float b, Elt e, cudaStream_t s) {
  const int64_t n = p.n * p.c * p.oh * p.ow;
  if (n <= 0) return;
  by_elt(e, [&](auto t) {
    using T = decltype(t);
    depthwise_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias),
                                                   static_cast<const T*>(z), static_cast<T*>(y), p, act, a, b);
  });
}

void epilogue(void* y, const void* bias, const void* z, int64_t n, int64_t channels, int64_t inner, Act act,
              float a, float b, Elt e, cudaStream_t s) {
  if (n <= 0) return;
  by_elt(e, [&](auto t) {
    using T = decltype(t);
    constexpr int kN = Pack<T>::kN;
    // (bias is read a value at a time: any alignment)
    const bool packs = n % kN == 0 && aligned16(y) && (!z || aligned16(z)) && (inner == 1 ? channels % kN == 0 : inner % kN == 0);
    if (packs) {
      const int64_t np = n / kN;
      if (n < (int64_t{1} << 31))
        epilogue_pack_k<T, int32_t><<<blocks_for(np), kThreads, 0, s>>>(
            static_cast<Pack<T>*>(y), static_cast<const T*>(bias), static_cast<const Pack<T>*>(z), static_cast<int32_t>(np),
            static_cast<int32_t>(channels), static_cast<int32_t>(inner), act, a, b);
      else
        epilogue_pack_k<T, int64_t><<<blocks_for(np), kThreads, 0, s>>>(static_cast<Pack<T>*>(y), static_cast<const T*>(bias),
                                                                        static_cast<const Pack<T>*>(z), np, channels, inner, act, a, b);
      return;
    }
    epilogue_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<T*>(y), static_cast<const T*>(bias), static_cast<const T*>(z), n,
                                                  channels, inner, act, a, b);
  });
}
void channel_affine(const void* x, void* y, const float* scale, const float* shift, int64_t n, int64_t channels,
                    int64_t inner, Elt e, cudaStream_t s) {
  if (n <= 0) return;
  by_elt(e, [&](auto t) {
    using T = decltype(t);
    constexpr int kN = Pack<T>::kN;
    if (inner % kN == 0 && aligned16(x) && aligned16(y)) {
      const int64_t np = n / kN;
      if (n < (int64_t{1} << 31))
        affine_pack_k<T, int32_t><<<blocks_for(np), kThreads, 0, s>>>(static_cast<const Pack<T>*>(x), static_cast<Pack<T>*>(y), scale,
                                                                      shift, static_cast<int32_t>(np), static_cast<int32_t>(channels),
                                                                      static_cast<int32_t>(inner));
      else
        affine_pack_k<T, int64_t><<<blocks_for(np), kThreads, 0, s>>>(static_cast<const Pack<T>*>(x), static_cast<Pack<T>*>(y), scale,
                                                                      shift, np, channels, inner);
      return;
    }
    affine_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), scale, shift, n, channels, inner);
  });
}
void unary(const void* x, void* y, int64_t n, Act act, float a, float b, Elt e, cudaStream_t s) {
  if (n <= 0) return;
  by_elt(e, [&](auto t) {
    using T = decltype(t);
    constexpr int kN = Pack<T>::kN;
    if (n % kN == 0 && aligned16(x) && aligned16(y)) {
      unary_pack_k<<<blocks_for(n / kN), kThreads, 0, s>>>(static_cast<const Pack<T>*>(x), static_cast<Pack<T>*>(y), n / kN, act, a, b);
      return;
    }
    unary_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), n, act, a, b);
  });
}
// Merges adjacent dims that step through memory as one (and drops dims of 1): fewer divisions.
Broadcast coalesce(const Broadcast& b) {
  Broadcast r;
  for (int d = 0; d < b.rank; ++d) {
    if (b.out[d] == 1) continue;
    if (r.rank > 0 && r.sa[r.rank - 1] == b.sa[d] * b.out[d] && r.sb[r.rank - 1] == b.sb[d] * b.out[d]) {
      r.out[r.rank - 1] *= b.out[d];
      r.sa[r.rank - 1] = b.sa[d];
      r.sb[r.rank - 1] = b.sb[d];
      continue;
    }
    r.out[r.rank] = b.out[d];
    r.sa[r.rank] = b.sa[d];
    r.sb[r.rank] = b.sb[d];
    ++r.rank;
  }
  return r;
}
Strided coalesce(const Strided& st) {
  Strided r;
  r.offset = st.offset;
  for (int d = 0; d < st.rank; ++d) {
    if (st.out[d] == 1) continue;
    if (r.rank > 0 && r.stride[r.rank - 1] == st.stride[d] * st.out[d]) {
      r.out[r.rank - 1] *= st.out[d];
      r.stride[r.rank - 1] = st.stride[d];
      continue;
    }
    r.out[r.rank] = st.out[d];
    r.stride[r.rank] = st.stride[d];
    ++r.rank;
  }
  return r;
}
// Every element and offset of a launch fits in 32 bits.
bool small(int64_t n, int64_t span) { return n < (int64_t{1} << 31) && span < (int64_t{1} << 31); }

void binary(const void* a0, const void* b0, void* y0, int64_t n, Bin op, const Broadcast& bc, bool flat, Elt e, cudaStream_t s) {
  if (n <= 0) return;
  by_elt(e, [&](auto t) {
    using T = decltype(t);
    const T* a = static_cast<const T*>(a0);
    const T* b = static_cast<const T*>(b0);
    T* y = static_cast<T*>(y0);
    constexpr int kN = Pack<T>::kN;
    const Broadcast c = coalesce(bc);
    // Same shapes, or one operand a single value: in packs where aligned.
    int scalar = flat ? 0 : -1;
    if (!flat && c.rank == 1 && c.sa[0] == 0 && c.sb[0] == 1) scalar = 1;
    if (!flat && c.rank == 1 && c.sa[0] == 1 && c.sb[0] == 0) scalar = 2;
    if (scalar >= 0 && n % kN == 0 && aligned16(y) && (scalar == 1 || aligned16(a)) && (scalar == 2 || aligned16(b))) {
      binary_pack_k<<<blocks_for(n / kN), kThreads, 0, s>>>(a, b, reinterpret_cast<Pack<T>*>(y), n / kN, op, scalar);
      return;
    }
    if (flat) {
      binary_flat_k<<<blocks_for(n), kThreads, 0, s>>>(a, b, y, n, op);
      return;
    }
    if (small(n, n))
      binary_bc_k<T, int32_t><<<blocks_for(n), kThreads, 0, s>>>(a, b, y, static_cast<int32_t>(n), op, c);
    else
      binary_bc_k<T, int64_t><<<blocks_for(n), kThreads, 0, s>>>(a, b, y, n, op, c);
  });
}
template <class T>
void strided_typed(const void* x, void* y, int64_t n, const Strided& st, bool gather, cudaStream_t s) {
  int64_t span = st.offset;
  for (int d = 0; d < st.rank; ++d) span += (st.out[d] - 1) * (st.stride[d] < 0 ? -st.stride[d] : st.stride[d]);
  if (small(n, span + 1) && st.offset >= 0)
    strided_k<T, int32_t><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), static_cast<int32_t>(n), st, gather);
  else
    strided_k<T, int64_t><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), n, st, gather);
}
void strided_copy(const void* x, void* y, int elem, int64_t n, const Strided& st0, bool gather, cudaStream_t s) {
  if (n <= 0) return;
  Strided st = coalesce(st0);
  // Wider words while the innermost dim is contiguous on both sides and everything stays aligned:
  // up to 16 bytes per thread (a transpose that keeps the last dim moves whole rows this way).
  auto widens = [&] {
    if (elem >= 16 || st.rank == 0 || st.stride[st.rank - 1] != 1 || st.out[st.rank - 1] % 2 || st.offset % 2) return false;
    for (int d = 0; d + 1 < st.rank; ++d)
      if (st.stride[d] % 2) return false;
    const auto align = static_cast<uintptr_t>(2 * elem);
    return reinterpret_cast<uintptr_t>(x) % align == 0 && reinterpret_cast<uintptr_t>(y) % align == 0;
  };
  while (widens()) {
    st.out[st.rank - 1] /= 2;
    for (int d = 0; d + 1 < st.rank; ++d) st.stride[d] /= 2;
    st.offset /= 2;
    n /= 2;
    elem *= 2;
  }
  switch (elem) {
    case 1: strided_typed<uint8_t>(x, y, n, st, gather, s); break;
    case 2: strided_typed<uint16_t>(x, y, n, st, gather, s); break;
    case 4: strided_typed<uint32_t>(x, y, n, st, gather, s); break;
    case 8: strided_typed<uint64_t>(x, y, n, st, gather, s); break;
    default: strided_typed<uint4>(x, y, n, st, gather, s); break;
  }
}
void gather(const void* x, const void* idx, bool idx64, void* y, int elem, int64_t outer, int64_t axis_dim,
            int64_t inner, int64_t n_idx, cudaStream_t s) {
  // Rows of `inner` elements move as wider words where their bytes divide and both ends align:
  // up to 16 bytes per thread (ViT's q/k/v split: rows of 768 halves).
  for (int w : {16, 8, 4}) {
    const auto aw = static_cast<uintptr_t>(w);
    if (elem < w && (inner * elem) % w == 0 && reinterpret_cast<uintptr_t>(x) % aw == 0 && reinterpret_cast<uintptr_t>(y) % aw == 0) {
      inner = inner * elem / w;
      elem = w;
      break;
    }
  }
  const int64_t n = outer * n_idx * inner;
  if (n <= 0) return;
  auto go = [&](auto tag) {
    using T = decltype(tag);
    const T* xs = static_cast<const T*>(x);
    T* ys = static_cast<T*>(y);
    if (small(n, outer * axis_dim * inner)) {
      const auto o = static_cast<int32_t>(outer), a = static_cast<int32_t>(axis_dim), in = static_cast<int32_t>(inner),
                 ni = static_cast<int32_t>(n_idx);
      if (idx64)
        gather_k<<<blocks_for(n), kThreads, 0, s>>>(xs, static_cast<const int64_t*>(idx), ys, o, a, in, ni);
      else
        gather_k<<<blocks_for(n), kThreads, 0, s>>>(xs, static_cast<const int32_t*>(idx), ys, o, a, in, ni);
    } else if (idx64) {
      gather_k<<<blocks_for(n), kThreads, 0, s>>>(xs, static_cast<const int64_t*>(idx), ys, outer, axis_dim, inner, n_idx);
    } else {
      gather_k<<<blocks_for(n), kThreads, 0, s>>>(xs, static_cast<const int32_t*>(idx), ys, outer, axis_dim, inner, n_idx);
    }
  };
  if (elem == 16)
    go(uint4{});
  else if (elem == 4)
    go(uint32_t{});
  else if (elem == 8)
    go(uint64_t{});
  else if (elem == 2)
    go(uint16_t{});
  else
    go(uint8_t{});
}
void reduce(const void* x0, void* y0, int64_t outer, int64_t red, int64_t inner, Red op, bool root, Elt e, cudaStream_t s) {
  if (outer * inner <= 0) return;
  const bool mean = op == Red::Mean;
  by_elt(e, [&](auto t) {
    using T = decltype(t);
    const T* x = static_cast<const T*>(x0);
    T* y = static_cast<T*>(y0);
    if (inner == 1)
      reduce_rows_k<<<static_cast<unsigned>(outer), kThreads, 0, s>>>(x, y, red, op, root, mean);
    else
      reduce_strided_k<<<blocks_for(outer * inner), kThreads, 0, s>>>(x, y, outer, red, inner, op, root, mean);
  });
}
void softmax(const void* x0, void* y0, int64_t outer, int64_t red, int64_t inner, bool log, Elt e, cudaStream_t s) {
  if (outer * inner <= 0) return;
  by_elt(e, [&](auto t) {
    using T = decltype(t);
    const T* x = static_cast<const T*>(x0);
    T* y = static_cast<T*>(y0);
    if (inner == 1 && red <= 4096)
      softmax_warp_k<<<static_cast<unsigned>((outer + 7) / 8), 256, 0, s>>>(x, y, outer, red, log);
    else if (inner == 1)
      softmax_rows_k<<<static_cast<unsigned>(outer), red >= 512 ? 512 : 128, 0, s>>>(x, y, red, log);
    else
      softmax_strided_k<<<blocks_for(outer * inner), kThreads, 0, s>>>(x, y, outer, red, inner, log);
  });
}
void layer_norm(const void* x, void* y, const void* scale, const void* bias, int64_t rows, int64_t cols,
                float eps, Elt e, cudaStream_t s) {
  if (rows <= 0) return;
  by_elt(e, [&](auto t) {
    using T = decltype(t);
    if (cols <= 4096)
      layer_norm_warp_k<<<static_cast<unsigned>((rows + 7) / 8), 256, 0, s>>>(
          static_cast<const T*>(x), static_cast<T*>(y), static_cast<const T*>(scale), static_cast<const T*>(bias), rows, cols, eps);
    else
      layer_norm_k<<<static_cast<unsigned>(rows), 512, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                                static_cast<const T*>(scale), static_cast<const T*>(bias), cols, eps);
  });
}
void pool2d(const void* x, void* y, const Pool2d& p, Elt e, cudaStream_t s) {
  const int64_t n = p.n * p.c * p.oh * p.ow;
  if (n <= 0) return;
  by_elt(e, [&](auto t) {
    using T = decltype(t);
    pool2d_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), p);
  });
}

}  // namespace joule::cuda::k
