// joule's own CUDA kernels: fused epilogues, elementwise math with broadcasting, strided copies
// (transpose, slice, concat, expand), gather, reductions, softmax, layer norm and pooling.
// Grid-stride loops over 64-bit indices; one warp per row where a row is reduced (softmax,
// layer norm, reductions over contiguous rows), a block-wide tree otherwise.
#include <cfloat>
#include <cmath>

#include "joule/cuda/kernels.h"

namespace joule::cuda::k {
namespace {

constexpr int kThreads = 256;

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

__global__ void epilogue_k(float* y, const float* bias, const float* z, int64_t n, int64_t channels, int64_t inner,
                           Act act, float a, float b) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = y[i];
    if (bias) v += bias[(i / inner) % channels];
    if (z) v += z[i];
    y[i] = apply(act, v, a, b);
  }
}

__global__ void affine_k(const float* x, float* y, const float* scale, const float* shift, int64_t n, int64_t channels,
                         int64_t inner) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = (i / inner) % channels;
    y[i] = x[i] * scale[c] + shift[c];
  }
}

__global__ void unary_k(const float* x, float* y, int64_t n, Act act, float a, float b) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = apply(act, x[i], a, b);
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

__global__ void binary_flat_k(const float* a, const float* b, float* y, int64_t n, Bin op) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = bin(op, a[i], b[i]);
}

// I: the index type; 32-bit where every index fits (integer division costs a third of 64-bit's).
template <class I>
__global__ void binary_bc_k(const float* a, const float* b, float* y, I n, Bin op, Broadcast bc) {
  for (I i = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; i < n; i += static_cast<I>(gridDim.x) * blockDim.x) {
    I r = i, ia = 0, ib = 0;
    for (int d = bc.rank - 1; d >= 0; --d) {
      const I dim = static_cast<I>(bc.out[d]);
      const I idx = r % dim;
      r /= dim;
      ia += idx * static_cast<I>(bc.sa[d]);
      ib += idx * static_cast<I>(bc.sb[d]);
    }
    y[i] = bin(op, a[ia], b[ib]);
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
    y[i] = (k >= 0 && k < axis_dim) ? x[(o * axis_dim + k) * inner + in] : T(0);
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
__global__ void reduce_rows_k(const float* x, float* y, int64_t red, Red op, bool root, bool mean) {
  const float* row = x + blockIdx.x * red;
  float acc = red_init(op);
  for (int64_t i = threadIdx.x; i < red; i += blockDim.x) acc = red_step(op, acc, row[i]);
  acc = block_merge(op, acc);
  if (threadIdx.x == 0) {
    if (mean) acc /= static_cast<float>(red);
    if (root) acc = sqrtf(acc);
    y[blockIdx.x] = acc;
  }
}
__global__ void reduce_strided_k(const float* x, float* y, int64_t outer, int64_t red, int64_t inner, Red op, bool root,
                                 bool mean) {
  const int64_t n = outer * inner;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = i / inner, in = i % inner;
    const float* p = x + o * red * inner + in;
    float acc = red_init(op);
    for (int64_t r = 0; r < red; ++r) acc = red_step(op, acc, p[r * inner]);
    if (mean) acc /= static_cast<float>(red);
    if (root) acc = sqrtf(acc);
    y[i] = acc;
  }
}

__global__ void softmax_rows_k(const float* x, float* y, int64_t red, bool log) {
  const float* row = x + blockIdx.x * red;
  float* out = y + blockIdx.x * red;
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < red; i += blockDim.x) m = fmaxf(m, row[i]);
  m = block_merge(Red::Max, m);
  float sum = 0.f;
  for (int64_t i = threadIdx.x; i < red; i += blockDim.x) sum += expf(row[i] - m);
  sum = block_merge(Red::Sum, sum);
  if (log) {
    const float ls = logf(sum);
    for (int64_t i = threadIdx.x; i < red; i += blockDim.x) out[i] = row[i] - m - ls;
  } else {
    const float inv = 1.f / sum;
    for (int64_t i = threadIdx.x; i < red; i += blockDim.x) out[i] = expf(row[i] - m) * inv;
  }
}
__global__ void softmax_strided_k(const float* x, float* y, int64_t outer, int64_t red, int64_t inner, bool log) {
  const int64_t n = outer * inner;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = i / inner, in = i % inner;
    const float* p = x + o * red * inner + in;
    float* q = y + o * red * inner + in;
    float m = -INFINITY;
    for (int64_t r = 0; r < red; ++r) m = fmaxf(m, p[r * inner]);
    float sum = 0.f;
    for (int64_t r = 0; r < red; ++r) sum += expf(p[r * inner] - m);
    const float ls = logf(sum), inv = 1.f / sum;
    for (int64_t r = 0; r < red; ++r) q[r * inner] = log ? p[r * inner] - m - ls : expf(p[r * inner] - m) * inv;
  }
}

// Two passes over the row (mean, then centred variance) for the accuracy of PyTorch's.
__global__ void layer_norm_k(const float* x, float* y, const float* scale, const float* bias, int64_t cols, float eps) {
  const float* row = x + blockIdx.x * cols;
  float* out = y + blockIdx.x * cols;
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) s += row[i];
  const float mean = block_merge(Red::Sum, s) / static_cast<float>(cols);
  float v = 0.f;
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
    const float d = row[i] - mean;
    v += d * d;
  }
  const float inv = rsqrtf(block_merge(Red::Sum, v) / static_cast<float>(cols) + eps);
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x)
    out[i] = (row[i] - mean) * inv * scale[i] + (bias ? bias[i] : 0.f);
}

__global__ void pool2d_k(const float* x, float* y, Pool2d p) {
  const int64_t n = p.n * p.c * p.oh * p.ow;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, nc = i / (p.ow * p.oh);
    const float* plane = x + nc * p.h * p.w;
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
            const float v = plane[yy * p.w + xx];
            acc = (v != v || v > acc) ? v : acc;
          }
        } else {
          if (in) {
            acc += plane[yy * p.w + xx];
            ++cnt;
          } else if (p.count_pad && yy >= -p.ph && yy < p.h + p.ph_end && xx >= -p.pw && xx < p.w + p.pw_end) {
            ++cnt;  // a cell of the padding (not of a ceil_mode overhang)
          }
        }
      }
    }
    y[i] = p.max ? acc : (cnt ? acc / static_cast<float>(cnt) : 0.f);
  }
}

__global__ void depthwise_k(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
                            const float* __restrict__ z, float* __restrict__ y, Depthwise p, Act act, float a, float b) {
  const int64_t n = p.n * p.c * p.oh * p.ow;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, nc = i / (p.ow * p.oh), c = nc % p.c;
    const float* plane = x + nc * p.h * p.w;
    const float* f = w + c * p.kh * p.kw;
    const int64_t y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
    float acc = 0.f;
    for (int ky = 0; ky < p.kh; ++ky) {
      const int64_t yy = y0 + ky * p.dh;
      if (yy < 0 || yy >= p.h) continue;
      for (int kx = 0; kx < p.kw; ++kx) {
        const int64_t xx = x0 + kx * p.dw;
        if (xx >= 0 && xx < p.w) acc = fmaf(plane[yy * p.w + xx], f[ky * p.kw + kx], acc);
      }
    }
    if (bias) acc += bias[c];
    if (z) acc += z[i];
    y[i] = apply(act, acc, a, b);
  }
}

}  // namespace

void depthwise(const float* x, const float* w, const float* bias, const float* z, float* y, const Depthwise& p, Act act,
               float a, float b, cudaStream_t s) {
  const int64_t n = p.n * p.c * p.oh * p.ow;
  if (n > 0) depthwise_k<<<blocks_for(n), kThreads, 0, s>>>(x, w, bias, z, y, p, act, a, b);
}

void epilogue(float* y, const float* bias, const float* z, int64_t n, int64_t channels, int64_t inner, Act act,
              float a, float b, cudaStream_t s) {
  if (n > 0) epilogue_k<<<blocks_for(n), kThreads, 0, s>>>(y, bias, z, n, channels, inner, act, a, b);
}
void channel_affine(const float* x, float* y, const float* scale, const float* shift, int64_t n, int64_t channels,
                    int64_t inner, cudaStream_t s) {
  if (n > 0) affine_k<<<blocks_for(n), kThreads, 0, s>>>(x, y, scale, shift, n, channels, inner);
}
void unary(const float* x, float* y, int64_t n, Act act, float a, float b, cudaStream_t s) {
  if (n > 0) unary_k<<<blocks_for(n), kThreads, 0, s>>>(x, y, n, act, a, b);
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

void binary(const float* a, const float* b, float* y, int64_t n, Bin op, const Broadcast& bc, bool flat, cudaStream_t s) {
  if (n <= 0) return;
  if (flat) {
    binary_flat_k<<<blocks_for(n), kThreads, 0, s>>>(a, b, y, n, op);
    return;
  }
  const Broadcast c = coalesce(bc);
  if (small(n, n))
    binary_bc_k<int32_t><<<blocks_for(n), kThreads, 0, s>>>(a, b, y, static_cast<int32_t>(n), op, c);
  else
    binary_bc_k<int64_t><<<blocks_for(n), kThreads, 0, s>>>(a, b, y, n, op, c);
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
  if (elem == 4)
    go(uint32_t{});
  else if (elem == 8)
    go(uint64_t{});
  else if (elem == 2)
    go(uint16_t{});
  else
    go(uint8_t{});
}
void reduce(const float* x, float* y, int64_t outer, int64_t red, int64_t inner, Red op, bool root, cudaStream_t s) {
  if (outer * inner <= 0) return;
  const bool mean = op == Red::Mean;
  if (inner == 1)
    reduce_rows_k<<<static_cast<unsigned>(outer), kThreads, 0, s>>>(x, y, red, op, root, mean);
  else
    reduce_strided_k<<<blocks_for(outer * inner), kThreads, 0, s>>>(x, y, outer, red, inner, op, root, mean);
}
void softmax(const float* x, float* y, int64_t outer, int64_t red, int64_t inner, bool log, cudaStream_t s) {
  if (outer * inner <= 0) return;
  if (inner == 1)
    softmax_rows_k<<<static_cast<unsigned>(outer), red >= 512 ? 512 : 128, 0, s>>>(x, y, red, log);
  else
    softmax_strided_k<<<blocks_for(outer * inner), kThreads, 0, s>>>(x, y, outer, red, inner, log);
}
void layer_norm(const float* x, float* y, const float* scale, const float* bias, int64_t rows, int64_t cols,
                float eps, cudaStream_t s) {
  if (rows > 0) layer_norm_k<<<static_cast<unsigned>(rows), cols >= 1024 ? 512 : 128, 0, s>>>(x, y, scale, bias, cols, eps);
}
void pool2d(const float* x, float* y, const Pool2d& p, cudaStream_t s) {
  const int64_t n = p.n * p.c * p.oh * p.ow;
  if (n > 0) pool2d_k<<<blocks_for(n), kThreads, 0, s>>>(x, y, p);
}

}  // namespace joule::cuda::k
