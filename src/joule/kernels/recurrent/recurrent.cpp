// The fast algorithm of LSTM, GRU and RNN ("recurrent" op class): the input projection of every
// time step and both directions as one SGEMM (X [steps, input] x W^T, oneDNN's AVX-512 JIT:
// Debian's OpenBLAS runs its AVX2 kernels here, 1.4x slower on a 2-layer LSTM); then per
// step the recurrent product h x R^T (an axpy-form matrix-vector kernel on R^T packed at
// prepare time for small batches, SGEMM above) and the gate equations fused in one loop over
// the hidden units, with vec_math's sigmoid/tanh (compiled for the baseline and AVX-512) when
// the activations are the defaults, scalar libm activations otherwise. Independent work runs in
// parallel without a barrier per step: each (direction, batch slice) pair walks its whole
// sequence on one thread. The reference kernels (ops/lstm.cpp, gru.cpp, rnn.cpp) are the oracle.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include <immintrin.h>

#include "joule/core/cpu_features.h"
#include "joule/kernels/algorithm.h"
#include "joule/kernels/gemm/sgemm.h"
#include "joule/ops/recurrent_util.h"
#include "joule/ops/vec_math.h"

namespace joule::kernels {
namespace {

namespace vec = ops::vec;
using ops::recurrent::Activation;
using ops::recurrent::Fn;
using ops::recurrent::Kind;
using ops::recurrent::Spec;

// Batch slices up to this many rows use the matrix-vector kernel; more use SGEMM.
constexpr int64_t kMatvecRows = 16;

// out[r, n] = sum_k h[r, k] * rt[k * ld + n] for n < N (rt: R^T, row stride ld): axpy-wise
// over k. The baseline build; AVX2 and AVX-512 below.
JOULE_ALWAYS_INLINE void matvec_body(const float* h, int64_t rows, int64_t K, const float* rt, int64_t ld, int64_t N, float* out,
                                     int64_t out_ld) {
  for (int64_t r = 0; r < rows; ++r) {
    float* o = out + r * out_ld;
    const float* hr = h + r * K;
    for (int64_t n = 0; n < N; ++n) o[n] = 0.f;
    for (int64_t k = 0; k < K; ++k) {
      const float hk = hr[k];
      const float* row = rt + k * ld;
      for (int64_t n = 0; n < N; ++n) o[n] += hk * row[n];
    }
  }
}
void matvec_base(const float* h, int64_t rows, int64_t K, const float* rt, int64_t ld, int64_t N, float* out, int64_t out_ld) {
  matvec_body(h, rows, K, rt, ld, N, out, out_ld);
}
// CPUs with AVX2 + FMA but not AVX-512: sums in registers as matvec_avx512 below, 8 lanes. R rows
// x V vectors of 8 columns per step of k (R V = 12 sums; each load of R^T feeds R FMAs): 4 rows
// at a time (24 columns), the last 1 to 3 rows together; the columns past the last whole block
// one vector at a time, the last through a masked load.
template <int R, int V>
JOULE_AVX2_FMA void matvec_block_avx2(const float* h, int64_t K, const float* rt, int64_t ld, int64_t N, float* out,
                                      int64_t out_ld) {
  int64_t n0 = 0;
  for (; n0 + 8 * V <= N; n0 += 8 * V) {
    __m256 acc[R][V];
    for (auto& row : acc)
      for (auto& v : row) v = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; ++k) {
      const float* w = rt + k * ld + n0;
      __m256 wv[V];
      for (int u = 0; u < V; ++u) wv[u] = _mm256_loadu_ps(w + 8 * u);
      for (int i = 0; i < R; ++i) {
        const __m256 hk = _mm256_set1_ps(h[i * K + k]);
        for (int u = 0; u < V; ++u) acc[i][u] = _mm256_fmadd_ps(hk, wv[u], acc[i][u]);
      }
    }
    for (int i = 0; i < R; ++i)
      for (int u = 0; u < V; ++u) _mm256_storeu_ps(out + i * out_ld + n0 + 8 * u, acc[i][u]);
  }
  for (; n0 < N; n0 += 8) {
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<int64_t>(8, N - n0))),
                                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 acc[R];
    for (auto& v : acc) v = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; ++k) {
      const __m256 w = _mm256_maskload_ps(rt + k * ld + n0, m);
      for (int i = 0; i < R; ++i) acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(h[i * K + k]), w, acc[i]);
    }
    for (int i = 0; i < R; ++i) _mm256_maskstore_ps(out + i * out_ld + n0, m, acc[i]);
  }
}
JOULE_AVX2_FMA void matvec_avx2(const float* h, int64_t rows, int64_t K, const float* rt, int64_t ld, int64_t N, float* out,
                                int64_t out_ld) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) matvec_block_avx2<4, 3>(h + r * K, K, rt, ld, N, out + r * out_ld, out_ld);
  const float* hr = h + r * K;
  float* o = out + r * out_ld;
  switch (rows - r) {
    case 3: matvec_block_avx2<3, 4>(hr, K, rt, ld, N, o, out_ld); break;
    case 2: matvec_block_avx2<2, 6>(hr, K, rt, ld, N, o, out_ld); break;
    case 1: matvec_block_avx2<1, 8>(hr, K, rt, ld, N, o, out_ld); break;
    default: break;
  }
}

// One row on AVX2 (batch 1, the common case): R^T repacked in panels of 64 columns, each a
// single sequential stream over k ([P][K][64], zeros past the last column), so that every step
// reads R^T from L2 as one run instead of K rows 4 cache lines long (LSTM-bi2's layers at batch
// 1: 1.35 / 0.93 -> 1.05 / 0.70 ms on a Zen 3).
JOULE_AVX2_FMA void matvec1_panels_avx2(const float* h, int64_t K, const float* panels, int64_t N, float* out) {
  for (int64_t n0 = 0; n0 < N; n0 += 64) {
    const float* p = panels + n0 / 64 * K * 64;
    __m256 acc[8];
    for (auto& v : acc) v = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; ++k) {
      const __m256 hk = _mm256_set1_ps(h[k]);
      const float* w = p + k * 64;
      for (int u = 0; u < 8; ++u) acc[u] = _mm256_fmadd_ps(hk, _mm256_loadu_ps(w + 8 * u), acc[u]);
    }
    if (N - n0 >= 64) {
      for (int u = 0; u < 8; ++u) _mm256_storeu_ps(out + n0 + 8 * u, acc[u]);
    } else {
      alignas(32) float tail[64];
      for (int u = 0; u < 8; ++u) _mm256_store_ps(tail + 8 * u, acc[u]);
      std::memcpy(out + n0, tail, static_cast<size_t>(N - n0) * sizeof(float));
    }
  }
}

// Rows 1-16 on AVX2 from the same panels: 4 (or the last 2-3) rows x 16 columns in registers,
// each panel's rows 256 bytes apart (LSTM-bi2 at batch 8: 6.9-7.2 / 4.4-4.7 -> 6.4-6.6 /
// 4.3-4.5 ms per layer).
template <int R>
JOULE_AVX2_FMA void matvec_rows_panels_block(const float* h, int64_t K, const float* panels, int64_t N, float* out,
                                             int64_t out_ld) {
  for (int64_t n0 = 0; n0 < N; n0 += 16) {
    const float* p = panels + n0 / 64 * K * 64 + n0 % 64;
    __m256 acc[R][2];
    for (auto& row : acc) row[0] = row[1] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; ++k) {
      const __m256 w0 = _mm256_loadu_ps(p + k * 64), w1 = _mm256_loadu_ps(p + k * 64 + 8);
      for (int i = 0; i < R; ++i) {
        const __m256 hk = _mm256_set1_ps(h[i * K + k]);
        acc[i][0] = _mm256_fmadd_ps(hk, w0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(hk, w1, acc[i][1]);
      }
    }
    const int64_t n = std::min<int64_t>(16, N - n0);
    for (int i = 0; i < R; ++i) {
      if (n == 16) {
        _mm256_storeu_ps(out + i * out_ld + n0, acc[i][0]);
        _mm256_storeu_ps(out + i * out_ld + n0 + 8, acc[i][1]);
      } else {
        alignas(32) float tail[16];
        _mm256_store_ps(tail, acc[i][0]);
        _mm256_store_ps(tail + 8, acc[i][1]);
        std::memcpy(out + i * out_ld + n0, tail, static_cast<size_t>(n) * sizeof(float));
      }
    }
  }
}
JOULE_AVX2_FMA void matvec_rows_panels_avx2(const float* h, int64_t rows, int64_t K, const float* panels, int64_t N,
                                            float* out, int64_t out_ld) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) matvec_rows_panels_block<4>(h + r * K, K, panels, N, out + r * out_ld, out_ld);
  switch (rows - r) {
    case 3: matvec_rows_panels_block<3>(h + r * K, K, panels, N, out + r * out_ld, out_ld); break;
    case 2: matvec_rows_panels_block<2>(h + r * K, K, panels, N, out + r * out_ld, out_ld); break;
    case 1: matvec1_panels_avx2(h + r * K, K, panels, N, out + r * out_ld); break;  // 64 columns in flight
    default: break;
  }
}

// The same for one row and columns [n0, N): the sums of 128 columns in 8 registers over all of
// k (one load of R^T per FMA, eight independent FMA chains), then 16 columns at a time, the last
// ones masked.
JOULE_AVX512 void matvec_row_avx512(const float* h, int64_t K, const float* rt, int64_t ld, int64_t n0, int64_t N, float* o) {
  for (; n0 + 128 <= N; n0 += 128) {
    __m512 acc[8];
    for (auto& v : acc) v = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; ++k) {
      const __m512 hk = _mm512_set1_ps(h[k]);
      const float* row = rt + k * ld + n0;
      for (int u = 0; u < 8; ++u) acc[u] = _mm512_fmadd_ps(hk, _mm512_loadu_ps(row + 16 * u), acc[u]);
    }
    for (int u = 0; u < 8; ++u) _mm512_storeu_ps(o + n0 + 16 * u, acc[u]);
  }
  for (; n0 < N; n0 += 16) {
    const __mmask16 m = N - n0 >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (N - n0)) - 1);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; ++k) acc = _mm512_fmadd_ps(_mm512_set1_ps(h[k]), _mm512_maskz_loadu_ps(m, rt + k * ld + n0), acc);
    _mm512_mask_storeu_ps(o + n0, m, acc);
  }
}

// Four rows at once, 64 columns at a time: each load of R^T feeds four FMAs (16 sums in
// registers), so R^T is read once per four batch rows; the last columns row by row.
JOULE_AVX512 void matvec_avx512(const float* h, int64_t rows, int64_t K, const float* rt, int64_t ld, int64_t N, float* out,
                                int64_t out_ld) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* hr = h + r * K;
    int64_t n0 = 0;
    for (; n0 + 64 <= N; n0 += 64) {
      __m512 acc[4][4];
      for (auto& row : acc)
        for (auto& v : row) v = _mm512_setzero_ps();
      for (int64_t k = 0; k < K; ++k) {
        const float* w = rt + k * ld + n0;
        const __m512 w0 = _mm512_loadu_ps(w), w1 = _mm512_loadu_ps(w + 16), w2 = _mm512_loadu_ps(w + 32), w3 = _mm512_loadu_ps(w + 48);
        for (int i = 0; i < 4; ++i) {
          const __m512 hk = _mm512_set1_ps(hr[i * K + k]);
          acc[i][0] = _mm512_fmadd_ps(hk, w0, acc[i][0]);
          acc[i][1] = _mm512_fmadd_ps(hk, w1, acc[i][1]);
          acc[i][2] = _mm512_fmadd_ps(hk, w2, acc[i][2]);
          acc[i][3] = _mm512_fmadd_ps(hk, w3, acc[i][3]);
        }
      }
      for (int i = 0; i < 4; ++i)
        for (int u = 0; u < 4; ++u) _mm512_storeu_ps(out + (r + i) * out_ld + n0 + 16 * u, acc[i][u]);
    }
    for (int i = 0; i < 4; ++i) matvec_row_avx512(hr + i * K, K, rt, ld, n0, N, out + (r + i) * out_ld);
  }
  for (; r < rows; ++r) matvec_row_avx512(h + r * K, K, rt, ld, 0, N, out + r * out_ld);
}

// The gate equations of one batch row. xw: the input projection with the biases added (for
// GRU's candidate only W's bias), hr: h x R^T, state h (and LSTM's c) updated in place.
struct GateArgs {
  const float* xw;
  const float* hr;
  const float* peep;     // LSTM: [3H] i, o, f (zeros when the node has none)
  const float* rbh;      // GRU: the candidate's recurrent bias
  const float* zeros;    // [H] zeros
  float* h;
  float* c;              // LSTM: the cell state; GRU (linear_before_reset = 0): r (.) h out of phase 1
  float* scratch;        // [5H]; GRU keeps z in its first H between the two phases
  int64_t H;
  float clip;            // +inf when none
  bool input_forget;
};

JOULE_ALWAYS_INLINE float clampf(float x, float c) { return x < -c ? -c : (x > c ? c : x); }

// Default activations use vec_math; otherwise the spec's scalar functions.
template <bool kDefault>
JOULE_ALWAYS_INLINE float act(const Activation& a, float x, Fn def) {
  if constexpr (kDefault) return def == Fn::kSigmoid ? vec::sigmoid(x) : vec::tanh(x);
  else return ops::recurrent::activate(a, x);
}

// dst[j] = act(clip(x[j] + y[j] + p[j] s[j])), j < n. Each loop stores one array: GCC
// vectorises these (it does not if-convert a loop that stores two arrays around the selects of
// sigmoid and tanh).
template <bool kDefault, Fn kFn>
JOULE_ALWAYS_INLINE void gate(float* __restrict dst, const float* __restrict x, const float* __restrict y,
                              const float* __restrict p, const float* __restrict s, int64_t n, float clip, const Activation& a) {
  for (int64_t j = 0; j < n; ++j) dst[j] = act<kDefault>(a, clampf(x[j] + y[j] + p[j] * s[j], clip), kFn);
}

template <bool D>
JOULE_ALWAYS_INLINE void lstm_body(const GateArgs& g, const Activation* a) {
  const int64_t H = g.H;
  float* __restrict c = g.c;
  float* __restrict h = g.h;
  float *i = g.scratch, *f = i + H, *cand = f + H, *o = cand + H;
  gate<D, Fn::kSigmoid>(i, g.xw, g.hr, g.peep, c, H, g.clip, a[0]);
  if (g.input_forget) {
    for (int64_t j = 0; j < H; ++j) f[j] = 1.f - i[j];
  } else {
    gate<D, Fn::kSigmoid>(f, g.xw + 2 * H, g.hr + 2 * H, g.peep + 2 * H, c, H, g.clip, a[0]);
  }
  gate<D, Fn::kTanh>(cand, g.xw + 3 * H, g.hr + 3 * H, g.zeros, g.zeros, H, g.clip, a[1]);
  for (int64_t j = 0; j < H; ++j) c[j] = f[j] * c[j] + i[j] * cand[j];
  gate<D, Fn::kSigmoid>(o, g.xw + H, g.hr + H, g.peep + H, c, H, g.clip, a[0]);
  for (int64_t j = 0; j < H; ++j) h[j] = o[j] * act<D>(a[2], c[j], Fn::kTanh);
}

// GRU's update h = (1 - z) cand + z h.
JOULE_ALWAYS_INLINE void gru_update(float* __restrict h, const float* __restrict z, const float* __restrict cand, int64_t H) {
  for (int64_t j = 0; j < H; ++j) h[j] = (1.f - z[j]) * cand[j] + z[j] * h[j];
}

// GRU, linear_before_reset = 1: cand = g(xw + r (.) (h Rh^T + Rbh)).
template <bool D>
JOULE_ALWAYS_INLINE void gru_lbr_body(const GateArgs& g, const Activation* a) {
  const int64_t H = g.H;
  float *z = g.scratch, *r = z + H, *t = r + H, *cand = t + H;
  gate<D, Fn::kSigmoid>(z, g.xw, g.hr, g.zeros, g.zeros, H, g.clip, a[0]);
  gate<D, Fn::kSigmoid>(r, g.xw + H, g.hr + H, g.zeros, g.zeros, H, g.clip, a[0]);
  for (int64_t j = 0; j < H; ++j) t[j] = r[j] * (g.hr[2 * H + j] + g.rbh[j]);
  gate<D, Fn::kTanh>(cand, g.xw + 2 * H, t, g.zeros, g.zeros, H, g.clip, a[1]);
  gru_update(g.h, z, cand, H);
}

// GRU, linear_before_reset = 0, phase 1: z into scratch, r (.) h into g.c (the input of the
// candidate's product).
template <bool D>
JOULE_ALWAYS_INLINE void gru_zr_body(const GateArgs& g, const Activation* a) {
  const int64_t H = g.H;
  float *z = g.scratch, *r = z + H;
  gate<D, Fn::kSigmoid>(z, g.xw, g.hr, g.zeros, g.zeros, H, g.clip, a[0]);
  gate<D, Fn::kSigmoid>(r, g.xw + H, g.hr + H, g.zeros, g.zeros, H, g.clip, a[0]);
  for (int64_t j = 0; j < H; ++j) g.c[j] = r[j] * g.h[j];
}
// Phase 2: hr holds (r (.) h) x Rh^T.
template <bool D>
JOULE_ALWAYS_INLINE void gru_h_body(const GateArgs& g, const Activation* a) {
  const int64_t H = g.H;
  float *z = g.scratch, *t = z + 2 * H, *cand = t + H;
  for (int64_t j = 0; j < H; ++j) t[j] = g.hr[j] + g.rbh[j];
  gate<D, Fn::kTanh>(cand, g.xw + 2 * H, t, g.zeros, g.zeros, H, g.clip, a[1]);
  gru_update(g.h, z, cand, H);
}

template <bool D>
JOULE_ALWAYS_INLINE void rnn_body(const GateArgs& g, const Activation* a) {
  gate<D, Fn::kTanh>(g.h, g.xw, g.hr, g.zeros, g.zeros, g.H, g.clip, a[0]);
}

enum Step { kLstm, kGruLbr, kGruZr, kGruH, kRnn };
using StepFn = void (*)(const GateArgs&, const Activation*);

template <int S, bool D>
JOULE_ALWAYS_INLINE void step_body(const GateArgs& g, const Activation* a) {
  if constexpr (S == kLstm) lstm_body<D>(g, a);
  if constexpr (S == kGruLbr) gru_lbr_body<D>(g, a);
  if constexpr (S == kGruZr) gru_zr_body<D>(g, a);
  if constexpr (S == kGruH) gru_h_body<D>(g, a);
  if constexpr (S == kRnn) rnn_body<D>(g, a);
}
template <int S, bool D>
void step_base(const GateArgs& g, const Activation* a) {
  step_body<S, D>(g, a);
}
template <int S>
JOULE_AVX512 void step_avx512(const GateArgs& g, const Activation* a) {
  step_body<S, true>(g, a);
}
// 8 wide on CPUs with AVX2 but not AVX-512 (no FMA: the baseline's values).
template <int S>
JOULE_AVX2 void step_avx2(const GateArgs& g, const Activation* a) {
  step_body<S, true>(g, a);
}

template <int S>
StepFn step_fn(bool default_acts) {
  if (!default_acts) return &step_base<S, false>;
  return cpu_features().avx512 ? &step_avx512<S> : cpu_features().avx2_fma ? &step_avx2<S> : &step_base<S, true>;
}

// True when direction `dir`'s activations are the op's defaults (the vec_math path).
bool default_activations(const Spec& s, int dir) {
  static const Fn lstm[] = {Fn::kSigmoid, Fn::kTanh, Fn::kTanh}, gru[] = {Fn::kSigmoid, Fn::kTanh}, rnn[] = {Fn::kTanh};
  const Fn* want = s.kind == Kind::kLstm ? lstm : s.kind == Kind::kGru ? gru : rnn;
  for (int k = 0; k < s.acts_per_dir; ++k)
    if (s.act(dir, k).fn != want[k]) return false;
  return true;
}

std::string supports(const NodeView& v) {
  if (!v.has(0) || v.in_types[0]->dtype != DType::Float32) return "not float32";
  for (size_t i : {size_t{1}, size_t{2}, size_t{3}, size_t{7}})
    if (v.has(i) && !v.constant(i)) return "W, R, B and P must be constants";
  const std::string op = v.node.op_type;
  const Kind kind = op == "LSTM" ? Kind::kLstm : op == "GRU" ? Kind::kGru : Kind::kRnn;
  if (std::string why = ops::recurrent::check(v.node, kind); !why.empty()) return why;
  return "";
}

double estimate_ms(const NodeView& v) {
  Shape x, w;
  if (!v.static_shape(0, &x) || !v.static_shape(1, &w) || x.size() != 3 || w.size() != 3) return 0.01;
  const double flops = 2.0 * static_cast<double>(x[0] * x[1]) * static_cast<double>(w[0] * w[1]) *
                       static_cast<double>(w[2] + w[1] / (v.node.op_type == "LSTM" ? 4 : v.node.op_type == "GRU" ? 3 : 1));
  return sgemm_estimate_ms(Blas::kOnednn, flops, 1);
}

class RecurrentKernel final : public Kernel {
 public:
  explicit RecurrentKernel(const NodeView& v) {
    const std::string op = v.node.op_type;
    s_ = ops::recurrent::parse(v.node, op == "LSTM" ? Kind::kLstm : op == "GRU" ? Kind::kGru : Kind::kRnn);
    H_ = s_.hidden;
    GH_ = s_.gates * H_;
    const Tensor& W = *v.constant(1);
    const Tensor& R = *v.constant(2);
    if (W.dtype() != DType::Float32 || R.dtype() != DType::Float32 || W.rank() != 3 || R.shape() != Shape{s_.dirs, GH_, H_} ||
        W.dim(0) != s_.dirs || W.dim(1) != GH_)
      fail(v.node.where() + ": W " + W.describe() + " or R " + R.describe() + " does not match hidden_size and direction");
    I_ = W.dim(2);
    w_.assign(W.data<float>(), W.data<float>() + W.numel());
    rt_.resize(static_cast<size_t>(s_.dirs * H_ * GH_));
    for (int d = 0; d < s_.dirs; ++d)
      for (int64_t n = 0; n < GH_; ++n)
        for (int64_t k = 0; k < H_; ++k) rt_[static_cast<size_t>((d * H_ + k) * GH_ + n)] = R.data<float>()[(d * GH_ + n) * H_ + k];
    // The same in panels of 64 columns for matvec_rows_panels_avx2 ([dirs][P][H][64]), on the
    // CPUs that use it (AVX2 without AVX-512).
    P_ = (GH_ + 63) / 64;
    if (!cpu_features().avx512 && cpu_features().avx2_fma) panels_.assign(static_cast<size_t>(s_.dirs * P_ * H_ * 64), 0.f);
    for (int d = 0; d < s_.dirs && !panels_.empty(); ++d)
      for (int64_t k = 0; k < H_; ++k)
        for (int64_t n = 0; n < GH_; ++n)
          panels_[static_cast<size_t>(((d * P_ + n / 64) * H_ + k) * 64 + n % 64)] = rt_[static_cast<size_t>((d * H_ + k) * GH_ + n)];
    // Biases folded into the projection: Wb + Rb, except GRU's candidate Rbh (kept apart).
    bias_.assign(static_cast<size_t>(s_.dirs * GH_), 0.f);
    rbh_.assign(static_cast<size_t>(s_.dirs * H_), 0.f);
    if (const Tensor* B = v.constant(3)) {
      if (B->dtype() != DType::Float32 || B->shape() != Shape{s_.dirs, 2 * GH_}) fail(v.node.where() + ": B " + B->describe() + " has the wrong shape");
      const float* b = B->data<float>();
      for (int d = 0; d < s_.dirs; ++d)
        for (int64_t n = 0; n < GH_; ++n) {
          const float wb = b[d * 2 * GH_ + n], rb = b[d * 2 * GH_ + GH_ + n];
          const bool apart = s_.kind == Kind::kGru && n >= 2 * H_;
          bias_[static_cast<size_t>(d * GH_ + n)] = apart ? wb : wb + rb;
          if (apart) rbh_[static_cast<size_t>(d * H_ + n - 2 * H_)] = rb;
        }
    }
    peep_.assign(static_cast<size_t>(s_.dirs * 3 * H_), 0.f);
    if (const Tensor* P = s_.kind == Kind::kLstm ? v.constant(7) : nullptr) {
      if (P->dtype() != DType::Float32 || P->shape() != Shape{s_.dirs, 3 * H_}) fail(v.node.where() + ": P " + P->describe() + " has the wrong shape");
      peep_.assign(P->data<float>(), P->data<float>() + P->numel());
    }
    for (int d = 0; d < s_.dirs; ++d) default_.push_back(default_activations(s_, d));
    clip_ = s_.clip > 0 ? s_.clip : std::numeric_limits<float>::infinity();
    zeros_.assign(static_cast<size_t>(H_), 0.f);
  }

  // X, sequence_lens and the initial states; W, R, B and P were packed at prepare time.
  bool reads_input(size_t i) const override { return i == 0 || (i >= 4 && i <= 6); }
  std::string detail() const override { return "projection sgemm + fused gates"; }

  void run(ops::KernelContext& k) const override {
    const ops::recurrent::Dims d = ops::recurrent::dims_of(k, s_, false);
    if (d.input != I_) fail(k.node.where() + ": X " + k.in(0).describe() + " differs from W's input size " + std::to_string(I_));
    const std::vector<int64_t> lens = ops::recurrent::sequence_lengths(k, d);
    const ops::recurrent::Outputs out = ops::recurrent::allocate_outputs(k, s_, d);
    const int64_t steps = d.seq * d.batch;
    // The input projection of every step, both directions in one product (W is [dirs * GH, I]):
    // xw[row, dir * GH + n] = x[row] W_dir^T + bias.
    const int64_t ldx = s_.dirs * GH_;
    std::vector<float> xw(static_cast<size_t>(steps * ldx));
    for (int64_t r = 0; r < steps; ++r) std::memcpy(xw.data() + r * ldx, bias_.data(), static_cast<size_t>(ldx) * sizeof(float));
    if (steps > 0)
      parallel_sgemm(Blas::kOnednn, *k.pool, false, true, steps, ldx, I_, 1.f, k.in(0).data<float>(), I_, w_.data(), I_, 1.f,
                     xw.data(), ldx);
    // (direction, batch slice) pairs, each on one thread for the whole sequence.
    const int threads = k.pool->threads();
    const int64_t per_dir = std::max<int64_t>(1, std::min<int64_t>(d.batch, threads / s_.dirs));
    const int64_t items = s_.dirs * per_dir;
    auto body = [&](int64_t begin, int64_t end) {
      for (int64_t it = begin; it < end; ++it) {
        const int dir = static_cast<int>(it / per_dir);
        const int64_t slice = it % per_dir;
        const int64_t b0 = d.batch * slice / per_dir, b1 = d.batch * (slice + 1) / per_dir;
        walk(k, d, lens, out, xw.data() + dir * GH_, ldx, dir, b0, b1, items == 1 ? threads : 1);
      }
    };
    if (items > 1) k.pool->parallel_for(items, body);
    else body(0, items);
  }

 private:
  // Rows [b0, b1) of direction `dir` through their whole sequences (xw: this direction's
  // projection, row stride ldx). `threads` > 1 only when this is the only work item (then the
  // SGEMM of a large batch slice uses the pool).
  void walk(ops::KernelContext& k, const ops::recurrent::Dims& d, const std::vector<int64_t>& lens,
            const ops::recurrent::Outputs& out, const float* xw, int64_t ldx, int dir, int64_t b0, int64_t b1, int threads) const {
    const int64_t rows = b1 - b0;
    const ops::recurrent::Layout l{d, s_.dirs, H_, s_.batch_major};
    std::vector<float> h(static_cast<size_t>(rows * H_)), c(static_cast<size_t>(rows * H_)), hr(static_cast<size_t>(rows * GH_)),
        scratch(static_cast<size_t>(5 * H_)), rh(static_cast<size_t>(H_)), hr2(static_cast<size_t>(H_));
    for (int64_t r = 0; r < rows; ++r) {
      ops::recurrent::initial_state(k, 5, s_, d, dir, b0 + r, h.data() + r * H_);
      ops::recurrent::initial_state(k, s_.kind == Kind::kLstm ? 6 : 99, s_, d, dir, b0 + r, c.data() + r * H_);
    }
    const float* rt = rt_.data() + dir * H_ * GH_;
    // (panels_ is built only on the CPUs that read it: no offset from its null data otherwise)
    const float* panels = panels_.empty() ? nullptr : panels_.data() + dir * P_ * H_ * 64;
    const Activation* acts = &s_.act(dir, 0);
    const bool def = default_[static_cast<size_t>(dir)];
    const bool gru_two_phase = s_.kind == Kind::kGru && !s_.linear_before_reset;
    const StepFn main_step = s_.kind == Kind::kLstm ? step_fn<kLstm>(def)
                             : s_.kind == Kind::kRnn ? step_fn<kRnn>(def)
                             : gru_two_phase        ? step_fn<kGruZr>(def)
                                                    : step_fn<kGruLbr>(def);
    const StepFn gru_h = step_fn<kGruH>(def);
    const auto matvec = cpu_features().avx512 ? &matvec_avx512 : cpu_features().avx2_fma ? &matvec_avx2 : &matvec_base;
    // h x R^T restricted to columns [n0, n0 + N) of R^T, for the rows in `in` (row stride K = H).
    auto product = [&](const float* in, int64_t n0, int64_t N, float* dst) {
      if (!panels_.empty() && rows <= kMatvecRows && n0 % 64 == 0) {
        matvec_rows_panels_avx2(in, rows, H_, panels + n0 / 64 * H_ * 64, N, dst, GH_);
      } else if (rows <= kMatvecRows) {
        matvec(in, rows, H_, rt + n0, GH_, N, dst, GH_);
      } else if (threads > 1) {
        parallel_sgemm(Blas::kOnednn, *k.pool, false, false, rows, N, H_, 1.f, in, H_, rt + n0, GH_, 0.f, dst, GH_);
      } else {
        sgemm(Blas::kOnednn, 1, false, false, rows, N, H_, 1.f, in, H_, rt + n0, GH_, 0.f, dst, GH_);
      }
    };
    int64_t max_len = 0;
    for (int64_t b = b0; b < b1; ++b) max_len = std::max(max_len, lens[static_cast<size_t>(b)]);
    const size_t hb = static_cast<size_t>(H_) * sizeof(float);
    for (int64_t step = 0; step < max_len; ++step) {
      product(h.data(), 0, gru_two_phase ? 2 * H_ : GH_, hr.data());
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t b = b0 + r, len = lens[static_cast<size_t>(b)];
        if (step >= len) continue;  // this entry's sequence has ended: its state stays
        const int64_t t = s_.dir_reversed(dir) ? len - 1 - step : step;
        GateArgs g{xw + l.x_row(t, b) * ldx, hr.data() + r * GH_, peep_.data() + dir * 3 * H_, rbh_.data() + dir * H_,
                   zeros_.data(), h.data() + r * H_, c.data() + r * H_, scratch.data(), H_, clip_, s_.input_forget};
        if (gru_two_phase) {
          g.c = rh.data();  // phase 1 writes z and r (.) h
          main_step(g, acts);
          matvec(rh.data(), 1, H_, rt + 2 * H_, GH_, H_, hr2.data(), H_);
          g.hr = hr2.data();
          gru_h(g, acts);
        } else {
          main_step(g, acts);
        }
        if (out.y) std::memcpy(out.y + l.y_off(t, dir, b), g.h, hb);
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      if (out.y_h) std::memcpy(out.y_h + l.state_off(dir, b0 + r), h.data() + r * H_, hb);
      if (out.y_c) std::memcpy(out.y_c + l.state_off(dir, b0 + r), c.data() + r * H_, hb);
    }
  }

  Spec s_;
  int64_t H_ = 0, GH_ = 0, I_ = 0;
  std::vector<float> w_, rt_, panels_, bias_, rbh_, peep_, zeros_;
  int64_t P_ = 0;  // panels of 64 columns of R^T
  std::vector<bool> default_;
  float clip_ = 0;
};

std::unique_ptr<Kernel> prepare(const NodeView& v) { return std::make_unique<RecurrentKernel>(v); }

}  // namespace

bool is_recurrent(const ir::Node& n) {
  return (n.domain.empty() || n.domain == "ai.onnx") && (n.op_type == "LSTM" || n.op_type == "GRU" || n.op_type == "RNN");
}

extern const Algorithm kRecurrentFused;
const Algorithm kRecurrentFused{"recurrent", "gemm_fused",
                                "float32 LSTM/GRU/RNN: the input projection of all steps as one SGEMM, the recurrent "
                                "product per step with the gate equations fused, directions and batch slices over threads",
                                supports, estimate_ms, prepare};

}  // namespace joule::kernels
