// The "simd" algorithms of the normalisation op classes, float32 with static shapes:
// - softmax: Softmax along contiguous rows (the last axis from opset 13; the flattened trailing
//   part before). Max, exp (ops/vec_math.h, 2.5e-7 relative) and sum reassociated across 16
//   lanes; a partial last block is padded with -inf (AVX-512: masked), so rows of any length
//   (attention's 197, 65, ...) stay on vector code.
// - layer_norm: LayerNormalization (ONNX and joule's, output 0 only) with constant Scale and B,
//   statistics in float over the row (two passes, reassociated sums).
// - batch_norm: inference BatchNormalization with constant statistics (what fold_batch_norm
//   cannot fold: DenseNet's pre-activation BN after a Concat) as y = x * a[c] + b[c] per plane,
//   or per row of C values on N,H,W,C (joule's BatchNormalization with channels_last).
// Each loop is compiled for the baseline and for AVX-512; rows or planes split over threads.
// The ops' reference kernels (ops/) compute the same in double or plain scalar loops.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cmath>
#include <limits>
#include <vector>

#include "joule/core/cpu_features.h"
#include "joule/core/error.h"
#include "joule/kernels/eltwise/eltwise.h"
#include "joule/ops/util.h"
#include "joule/ops/vec_math.h"

namespace joule::kernels {
namespace {

namespace vec = ops::vec;

// ---- softmax rows

JOULE_ALWAYS_INLINE void softmax_row_body(const float* x, float* y, int64_t n) {
  constexpr int64_t L = 16;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t nf = n / L * L, nt = n - nf;
  float tail[L];
  for (int64_t l = 0; l < L; ++l) tail[l] = l < nt ? x[nf + l] : kNegInf;
  float mv[L];
  for (int64_t l = 0; l < L; ++l) mv[l] = tail[l];
  for (int64_t i = 0; i < nf; i += L)
    for (int64_t l = 0; l < L; ++l) mv[l] = x[i + l] > mv[l] ? x[i + l] : mv[l];
  float m = kNegInf;
  for (int64_t l = 0; l < L; ++l) m = mv[l] > m ? mv[l] : m;
  float sv[L];
  for (int64_t l = 0; l < L; ++l) {
    tail[l] = vec::exp(tail[l] - m);
    sv[l] = tail[l];
  }
  for (int64_t i = 0; i < nf; i += L)
    for (int64_t l = 0; l < L; ++l) {
      const float e = vec::exp(x[i + l] - m);
      y[i + l] = e;
      sv[l] += e;
    }
  float s = 0;
  for (int64_t l = 0; l < L; ++l) s += sv[l];
  const float inv = 1.f / s;
  for (int64_t i = 0; i < nf; i += L)
    for (int64_t l = 0; l < L; ++l) y[i + l] *= inv;
  for (int64_t l = 0; l < nt; ++l) y[nf + l] = tail[l] * inv;
}
void softmax_row_base(const float* x, float* y, int64_t n) { softmax_row_body(x, y, n); }

// The same arithmetic in AVX-512 intrinsics (GCC keeps the max reduction above in 16 scalar
// registers): e^x as vec::exp (same reduction and polynomial; 2^n by scalef), the partial last
// block through masked loads and stores.
JOULE_AVX512 inline __m512 exp16(__m512 x) {
  const __m512 x0 = x;
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __mmask16 under = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_LT_OQ);
  x = _mm512_min_ps(_mm512_set1_ps(88.3f), _mm512_max_ps(_mm512_set1_ps(-87.3f), x));  // NaN (second) stays
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.4426950408889634f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.4286068203094173e-06f), r);
  __m512 p = _mm512_set1_ps(1.f / 5040);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 720));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  // NaN in, NaN out (the clamps above would make it a number): a row holding +inf or NaN is NaN
  return _mm512_mask_mov_ps(_mm512_maskz_mov_ps(static_cast<__mmask16>(~under), _mm512_scalef_ps(p, n)), nan, x0);
}

JOULE_AVX512 void softmax_row_avx512(const float* x, float* y, int64_t n) {
  const int64_t nf = n / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - nf)) - 1);
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 mv = _mm512_mask_loadu_ps(ninf, tail, x + nf);
  for (int64_t i = 0; i < nf; i += 16) mv = _mm512_max_ps(mv, _mm512_loadu_ps(x + i));
  const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mv));
  __m512 sv = _mm512_setzero_ps();
  for (int64_t i = 0; i < nf; i += 16) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), m));
    _mm512_storeu_ps(y + i, e);
    sv = _mm512_add_ps(sv, e);
  }
  const __m512 et = _mm512_maskz_mov_ps(tail, exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(ninf, tail, x + nf), m)));
  sv = _mm512_add_ps(sv, et);
  const __m512 inv = _mm512_set1_ps(1.f / _mm512_reduce_add_ps(sv));
  for (int64_t i = 0; i < nf; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(y + i), inv));
  _mm512_mask_storeu_ps(y + nf, tail, _mm512_mul_ps(et, inv));
}

// The same in AVX2 + FMA intrinsics (CPUs without AVX-512): 8 lanes, 2^n from the exponent bits
// (n in [-126, 127] after the clamps: normal), the last block through masked loads and stores.
JOULE_AVX2_FMA inline __m256 exp8(__m256 x) {
  const __m256 x0 = x;
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_GE_OQ);  // false below, and for NaN
  x = _mm256_min_ps(_mm256_set1_ps(88.3f), _mm256_max_ps(_mm256_set1_ps(-87.3f), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.4426950408889634f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.4286068203094173e-06f), r);
  __m256 p = _mm256_set1_ps(1.f / 5040);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f / 720));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 v = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  return _mm256_blendv_ps(_mm256_and_ps(keep, v), x0, nan);  // NaN in, NaN out
}

JOULE_AVX2_FMA void softmax_row_avx2(const float* x, float* y, int64_t n) {
  const int64_t nf = n / 8 * 8;
  const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - nf)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256 xt = _mm256_blendv_ps(ninf, _mm256_maskload_ps(x + nf, tail), _mm256_castsi256_ps(tail));
  __m256 mv = xt;
  for (int64_t i = 0; i < nf; i += 8) mv = _mm256_max_ps(mv, _mm256_loadu_ps(x + i));  // NaN (second) stays
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mv), _mm256_extractf128_ps(mv, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  // (max may drop a NaN; x - m of that element is NaN all the same, and so is the row's sum)
  const __m256 m = _mm256_set1_ps(_mm_cvtss_f32(m4));
  __m256 sv = _mm256_setzero_ps();
  for (int64_t i = 0; i < nf; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
    _mm256_storeu_ps(y + i, e);
    sv = _mm256_add_ps(sv, e);
  }
  const __m256 et = _mm256_and_ps(_mm256_castsi256_ps(tail), exp8(_mm256_sub_ps(xt, m)));
  sv = _mm256_add_ps(sv, et);
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(sv), _mm256_extractf128_ps(sv, 1));
  s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_add_ss(s4, _mm_movehdup_ps(s4));
  const __m256 inv = _mm256_set1_ps(1.f / _mm_cvtss_f32(s4));
  for (int64_t i = 0; i < nf; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), inv));
  _mm256_maskstore_ps(y + nf, tail, _mm256_mul_ps(et, inv));
}

// ---- layer norm rows

JOULE_ALWAYS_INLINE void layer_norm_row_body(const float* x, float* y, int64_t n, const float* scale,
                                             const float* bias, float eps) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t j = 0; j < n; ++j) s += x[j];
  const float mean = s / static_cast<float>(n);
  float v = 0;
#pragma omp simd reduction(+ : v)
  for (int64_t j = 0; j < n; ++j) v += (x[j] - mean) * (x[j] - mean);
  const float inv = 1.f / std::sqrt(v / static_cast<float>(n) + eps);
  for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * inv * scale[j] + bias[j];
}
void layer_norm_row_base(const float* x, float* y, int64_t n, const float* scale, const float* bias, float eps) {
  layer_norm_row_body(x, y, n, scale, bias, eps);
}
JOULE_AVX512 void layer_norm_row_avx512(const float* x, float* y, int64_t n, const float* scale, const float* bias,
                                        float eps) {
  layer_norm_row_body(x, y, n, scale, bias, eps);
}
JOULE_AVX2 void layer_norm_row_avx2(const float* x, float* y, int64_t n, const float* scale, const float* bias, float eps) {
  layer_norm_row_body(x, y, n, scale, bias, eps);
}

// ---- batch norm planes

JOULE_ALWAYS_INLINE void affine_body(const float* x, float* y, int64_t n, float a, float b) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + b;
}
void affine_base(const float* x, float* y, int64_t n, float a, float b) { affine_body(x, y, n, a, b); }
JOULE_AVX512 void affine_avx512(const float* x, float* y, int64_t n, float a, float b) { affine_body(x, y, n, a, b); }
JOULE_AVX2 void affine_avx2(const float* x, float* y, int64_t n, float a, float b) { affine_body(x, y, n, a, b); }

// `rows` rows of n channels (N,H,W,C): y = x * a[c] + b[c].
// `Relu`: the BN's fused activation (y < 0 ? 0 : y, NaN kept, as the Relu op).
template <bool Relu>
JOULE_ALWAYS_INLINE void affine_rows_body(const float* x, float* y, int64_t rows, int64_t n, const float* a, const float* b) {
  for (int64_t r = 0; r < rows; ++r, x += n, y += n)
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[i] * a[i] + b[i];
      y[i] = Relu && v < 0.f ? 0.f : v;
    }
}
template <bool Relu>
void affine_rows_base(const float* x, float* y, int64_t rows, int64_t n, const float* a, const float* b) {
  affine_rows_body<Relu>(x, y, rows, n, a, b);
}
template <bool Relu>
JOULE_AVX512 void affine_rows_avx512(const float* x, float* y, int64_t rows, int64_t n, const float* a, const float* b) {
  affine_rows_body<Relu>(x, y, rows, n, a, b);
}
template <bool Relu>
JOULE_AVX2 void affine_rows_avx2(const float* x, float* y, int64_t rows, int64_t n, const float* a, const float* b) {
  affine_rows_body<Relu>(x, y, rows, n, a, b);
}
using AffineRows = void (*)(const float*, float*, int64_t, int64_t, const float*, const float*);
template <bool Relu>
AffineRows affine_rows_of() {
  return cpu_features().avx512 ? affine_rows_avx512<Relu> : cpu_features().avx2_fma ? affine_rows_avx2<Relu> : affine_rows_base<Relu>;
}

// ---- plans

enum class Kind { kSoftmax, kLayerNorm, kBatchNorm };

struct Plan {
  Kind kind;
  Shape shape;
  int64_t rows = 0, n = 0;  // softmax/layer norm: rows of n; batch norm: N*C planes of n (N*H*W rows of C when channels_last)
  bool channels_last = false;
  bool relu = false;        // batch norm (channels_last): its fused Relu (passes/fuse_bn_relu)
  std::vector<float> a, b;  // layer norm: scale, bias (n); batch norm: per channel
  float eps = 0;
};

// Float32 input 0 of a static shape, the only output used.
std::string read_common(const NodeView& v, Plan* p) {
  if (!v.static_shape(0, &p->shape)) return "the input shape is not static";
  if (v.in_types[0]->dtype != DType::Float32) return std::string("input is ") + dtype_name(v.in_types[0]->dtype);
  for (size_t i = 1; i < v.node.outputs.size(); ++i)
    if (!v.node.outputs[i].empty()) return "an optional output is used";
  if (shape_numel(p->shape) == 0) return "an empty tensor";
  return "";
}

// Constant input i broadcast to `want` (a per-position parameter), as float; false when not a
// constant that broadcasts to it.
bool expand_constant(const NodeView& v, size_t i, const Shape& want, float def, std::vector<float>* out) {
  const int64_t n = shape_numel(want);
  out->assign(static_cast<size_t>(n), def);
  if (!v.has(i)) return true;
  const Tensor* t = v.constant(i);
  if (!t || t->rank() > static_cast<int>(want.size())) return false;
  const size_t off = want.size() - static_cast<size_t>(t->rank());  // right-aligned
  for (size_t d = 0; d < static_cast<size_t>(t->rank()); ++d)
    if (t->dim(static_cast<int>(d)) != 1 && t->dim(static_cast<int>(d)) != want[off + d]) return false;
  const ops::BroadcastIndexer ix(want, t->shape());
  for (int64_t j = 0; j < n; ++j) (*out)[static_cast<size_t>(j)] = static_cast<float>(t->value_as_double(ix.offset(j)));
  return true;
}

std::string read(const NodeView& v, Plan* p) {
  const ir::Node& n = v.node;
  if (std::string why = read_common(v, p); !why.empty()) return why;
  const int64_t r = static_cast<int64_t>(p->shape.size());
  if (n.op_type == "Softmax") {
    p->kind = Kind::kSoftmax;
    // Before opset 13 the input is coerced to 2-D at axis (default 1): rows always contiguous.
    // From 13 the op runs along the one dim `axis` (default -1): rows when nothing follows it.
    int64_t axis = n.attr_int("axis", v.opset < 13 ? 1 : -1);
    if (axis < -r || axis > r || (axis == r && v.opset >= 13)) return "axis out of range";
    if (axis < 0) axis += r;
    p->rows = 1;
    for (int64_t d = 0; d < axis; ++d) p->rows *= p->shape[static_cast<size_t>(d)];
    p->n = shape_numel(p->shape) / p->rows;
    if (v.opset >= 13 && p->n != p->shape[static_cast<size_t>(axis)]) return "the softmax axis is not the last (strided rows)";
    return "";
  }
  if (n.op_type == "LayerNormalization") {
    p->kind = Kind::kLayerNorm;
    int64_t axis = n.attr_int("axis", -1);
    if (axis < -r || axis >= r) return "axis out of range";
    if (axis < 0) axis += r;
    const Shape norm(p->shape.begin() + axis, p->shape.end());
    p->n = shape_numel(norm);
    p->rows = shape_numel(p->shape) / p->n;
    p->eps = n.attr_float("epsilon", 1e-5f);
    if (!expand_constant(v, 1, norm, 1.f, &p->a) || !expand_constant(v, 2, norm, 0.f, &p->b))
      return "Scale or B is not a constant of the normalised shape";
    return "";
  }
  p->kind = Kind::kBatchNorm;
  if (n.attr_int("training_mode", 0) != 0) return "training mode";
  if (r < 2) return "rank below 2";
  p->channels_last = n.domain == "joule";  // (its check: channels_last = 1, rank 4)
  if (p->channels_last && r != 4) return "channels_last with rank other than 4";
  if (n.has_attr("activation")) {
    if (!p->channels_last || n.attr_string("activation", "") != "Relu") return "activation other than Relu";
    p->relu = true;
  }
  const int64_t c = p->shape[p->channels_last ? 3 : 1];
  p->rows = p->channels_last ? shape_numel(p->shape) / c : p->shape[0] * c;
  p->n = shape_numel(p->shape) / p->rows;
  const double eps = n.attr_float("epsilon", 1e-5f);
  const Tensor* t[4];
  for (size_t i = 0; i < 4; ++i) {
    t[i] = v.constant(i + 1);
    if (!t[i] || t[i]->numel() != c) return "scale, bias, mean or variance is not a constant of C values";
  }
  for (int64_t ch = 0; ch < c; ++ch) {  // as the reference kernel: in double, then float
    const double s = t[0]->value_as_double(ch) / std::sqrt(t[3]->value_as_double(ch) + eps);
    p->a.push_back(static_cast<float>(s));
    p->b.push_back(static_cast<float>(t[1]->value_as_double(ch) - t[2]->value_as_double(ch) * s));
  }
  return "";
}

class NormKernel final : public Kernel {
 public:
  explicit NormKernel(Plan p) : p_(std::move(p)) {}

  void run(ops::KernelContext& k) const override {
    const Tensor& X = k.in(0);
    if (X.dtype() != DType::Float32 || X.shape() != p_.shape)
      fail(k.node.where() + ": the simd kernel was prepared for float32" + shape_str(p_.shape) + ", got " + X.describe());
    Tensor& Y = k.output(0, DType::Float32, p_.shape);
    const float* x = X.data<float>();
    float* y = Y.data<float>();
    const bool avx512 = cpu_features().avx512, avx2 = cpu_features().avx2_fma;
    const int64_t n = p_.n;
    switch (p_.kind) {
      case Kind::kSoftmax: {
        const auto row = avx512 ? softmax_row_avx512 : avx2 ? softmax_row_avx2 : softmax_row_base;
        split_items(k.pool, p_.rows, n * 8, [&](int64_t r0, int64_t r1) {  // exp: ~8 element-passes
          for (int64_t r = r0; r < r1; ++r) row(x + r * n, y + r * n, n);
        });
        return;
      }
      case Kind::kLayerNorm: {
        const auto row = avx512 ? layer_norm_row_avx512 : avx2 ? layer_norm_row_avx2 : layer_norm_row_base;
        split_items(k.pool, p_.rows, n * 3, [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) row(x + r * n, y + r * n, n, p_.a.data(), p_.b.data(), p_.eps);
        });
        return;
      }
      case Kind::kBatchNorm: {
        if (p_.channels_last) {
          const AffineRows rows = p_.relu ? affine_rows_of<true>() : affine_rows_of<false>();
          split_items(k.pool, p_.rows, n, [&](int64_t r0, int64_t r1) {
            rows(x + r0 * n, y + r0 * n, r1 - r0, n, p_.a.data(), p_.b.data());
          });
          return;
        }
        const auto plane = avx512 ? affine_avx512 : avx2 ? affine_avx2 : affine_base;
        const size_t c = p_.a.size();
        split_items(k.pool, p_.rows, n, [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            const size_t ch = static_cast<size_t>(r) % c;
            plane(x + r * n, y + r * n, n, p_.a[ch], p_.b[ch]);
          }
        });
        return;
      }
    }
  }

 private:
  Plan p_;
};

std::string supports(const NodeView& v) {
  Plan p;
  return read(v, &p);
}

// Memory-bound passes at a few GB/s per thread on one core's share of bandwidth; softmax pays
// its exp (about 8 element-passes).
double estimate_ms(const NodeView& v) {
  const double n = static_cast<double>(planned_numel(v, 0));
  const double passes = v.node.op_type == "Softmax" ? 8 : v.node.op_type == "LayerNormalization" ? 3 : 1;
  return n * passes * 4 / (8e9 * std::max(1, v.threads)) * 1e3 + 0.001;
}

std::unique_ptr<Kernel> prepare(const NodeView& v) {
  Plan p;
  if (std::string why = read(v, &p); !why.empty()) fail_internal(v.node.where() + ": " + why);
  return std::make_unique<NormKernel>(std::move(p));
}

}  // namespace

std::string norm_class(const ir::Node& n) {
  if (n.domain.empty() && n.op_type == "Softmax") return "softmax";
  if ((n.domain.empty() || n.domain == "joule") && n.op_type == "LayerNormalization") return "layer_norm";
  if ((n.domain.empty() || n.domain == "joule") && n.op_type == "BatchNormalization") return "batch_norm";
  return "";
}

extern const Algorithm kSoftmaxSimd, kLayerNormSimd, kBatchNormSimd;
const Algorithm kSoftmaxSimd{"softmax", "simd", "float32 Softmax along contiguous rows, AVX-512, AVX2 (or baseline) exp, rows over threads",
                             supports, estimate_ms, prepare};
const Algorithm kLayerNormSimd{"layer_norm", "simd",
                               "float32 LayerNormalization with constant Scale/B, float statistics, rows over threads",
                               supports, estimate_ms, prepare};
const Algorithm kBatchNormSimd{"batch_norm", "simd",
                               "float32 inference BatchNormalization with constant statistics (N,C,H,W or joule's N,H,W,C): x * a[c] + b[c], planes or rows over threads",
                               supports, estimate_ms, prepare};

}  // namespace joule::kernels
