#include "joule/ops/movement_util.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <type_traits>

#include <immintrin.h>

#include "joule/core/cpu_features.h"
#include "joule/ops/vec_math.h"

namespace joule::ops::movement {

std::vector<ir::Dim> dims_of(const Shape& s) {
  std::vector<ir::Dim> d;
  d.reserve(s.size());
  for (int64_t v : s) d.push_back(ir::Dim{v, ""});
  return d;
}

Shape shape_of(const std::vector<ir::Dim>& dims) {
  Shape s;
  s.reserve(dims.size());
  for (auto& d : dims) {
    if (!d.is_static()) fail_internal("shape_of: non-static dims " + ir::dims_str(dims));
    s.push_back(d.value);
  }
  return s;
}

// Ranks above this are refused: a shape input that claims a billion entries would otherwise make
// a billion-entry type before anything is allocated for the data (found by fuzzing).
constexpr size_t kMaxRank = 1024;

ir::TensorType make_type(DType t, std::vector<ir::Dim> dims) {
  if (dims.size() > kMaxRank)
    fail("a tensor of rank " + std::to_string(dims.size()) + ": joule's limit is " + std::to_string(kMaxRank) + " dimensions");
  ir::TensorType r;
  r.dtype = t;
  r.has_shape = true;
  r.dims = std::move(dims);
  return r;
}

ir::TensorType unknown_rank(DType t) {
  ir::TensorType r;
  r.dtype = t;
  return r;
}

std::vector<ir::Dim> unknown_dims(size_t n) {
  if (n > kMaxRank) fail("a tensor of rank " + std::to_string(n) + ": joule's limit is " + std::to_string(kMaxRank) + " dimensions");
  return std::vector<ir::Dim>(n, ir::Dim{});
}

std::optional<std::vector<int64_t>> known_ints(const InferContext& c, size_t i) {
  if (!c.has(i) || i >= c.input_values.size() || !c.input_values[i]) return std::nullopt;
  return c.input_values[i]->to_int_vector();
}

int64_t static_length(const InferContext& c, size_t i) {
  if (!c.has(i)) return -1;
  const ir::TensorType& t = *c.input_types[i];
  if (!t.has_shape) return -1;
  if (t.dims.empty()) return 1;
  if (t.dims.size() != 1 || !t.dims[0].is_static()) return -1;
  return t.dims[0].value;
}

ir::Dim dims_product(const std::vector<ir::Dim>& dims, size_t begin, size_t end) {
  int64_t prod = 1;
  const ir::Dim* sym = nullptr;
  for (size_t i = begin; i < end; ++i) {
    const ir::Dim& d = dims[i];
    if (d.is_static()) {
      prod *= d.value;
    } else if (d.param.empty() || sym) {
      return ir::Dim{};
    } else {
      sym = &d;
    }
  }
  if (!sym) return ir::Dim{prod, ""};
  if (prod == 0) return ir::Dim{0, ""};
  return prod == 1 ? *sym : ir::Dim{};
}

ir::Dim dim_mul(const ir::Dim& d, int64_t k) {
  if (d.is_static()) return ir::Dim{d.value * k, ""};
  if (k == 1) return d;
  if (k == 0) return ir::Dim{0, ""};
  return ir::Dim{};
}

Tensor strided_copy(const Tensor& in, const Shape& shape_in, const std::vector<int64_t>& strides_in,
                    int64_t offset) {
  Tensor out(in.dtype(), shape_in);
  strided_copy_into(in, shape_in, strides_in, offset, out);
  return out;
}

void strided_copy_into(const Tensor& in, const Shape& shape_in, const std::vector<int64_t>& strides_in, int64_t offset,
                       Tensor& out) {
  const int64_t n = shape_numel(shape_in);
  if (n == 0) return;
  // Adjacent dims whose strides chain (d's stride = d+1's stride x d+1's size; broadcast dims,
  // stride 0, included) walk as one: longer rows (Expand of [n,1,1,1] to [n,256,7,7] fills rows
  // of 12544, not of 7).
  Shape out_shape;
  std::vector<int64_t> strides;
  for (size_t d = 0; d < shape_in.size(); ++d) {
    if (shape_in[d] == 1) continue;  // a size-1 dim moves nothing
    if (!out_shape.empty() && strides.back() == strides_in[d] * shape_in[d]) {
      out_shape.back() *= shape_in[d];
      strides.back() = strides_in[d];
    } else {
      out_shape.push_back(shape_in[d]);
      strides.push_back(strides_in[d]);
    }
  }
  if (out_shape.empty()) out_shape = {1}, strides = {0};
  const size_t r = out_shape.size();
  visit_elem_bytes(in.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = static_cast<const U*>(in.raw());
    U* dst = static_cast<U*>(out.raw());
    if (r == 0) {
      dst[0] = src[offset];
      return;
    }
    const int64_t inner = out_shape[r - 1];
    const int64_t step = strides[r - 1];
    const int64_t outer = n / inner;
    std::vector<int64_t> idx(r - 1, 0);
    int64_t base = offset;
    for (int64_t o = 0; o < outer; ++o) {
      U* row = dst + o * inner;
      const U* s = src + base;
      if (step == 1) {
        std::memcpy(row, s, static_cast<size_t>(inner) * sizeof(U));
      } else if (step == 0) {
        std::fill(row, row + inner, *s);
      } else {
        for (int64_t j = 0; j < inner; ++j) row[j] = s[j * step];
      }
      for (size_t d = r - 1; d-- > 0;) {
        base += strides[d];
        if (++idx[d] < out_shape[d]) break;
        base -= strides[d] * idx[d];
        idx[d] = 0;
      }
    }
  });
}

ir::TensorType permute_type(const ir::TensorType& t, const std::vector<int64_t>& perm) {
  ir::TensorType r = t;
  if (t.has_shape && t.dims.size() == perm.size())
    for (size_t i = 0; i < perm.size(); ++i) r.dims[i] = t.dims[static_cast<size_t>(perm[i])];
  return r;
}

namespace {

#ifdef __SSE2__
// dst[k * dst_stride + l] = src[l * src_stride + k] for k, l < 4: 4-byte elements, bit-exact.
template <class U>
inline void transpose4x4(const U* src, int64_t src_stride, U* dst, int64_t dst_stride) {
  auto load = [&](int64_t l) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + l * src_stride)); };
  const __m128i a = load(0), b = load(1), c = load(2), d = load(3);
  const __m128i ab_lo = _mm_unpacklo_epi32(a, b), cd_lo = _mm_unpacklo_epi32(c, d);
  const __m128i ab_hi = _mm_unpackhi_epi32(a, b), cd_hi = _mm_unpackhi_epi32(c, d);
  auto store = [&](int64_t k, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + k * dst_stride), v); };
  store(0, _mm_unpacklo_epi64(ab_lo, cd_lo));
  store(1, _mm_unpackhi_epi64(ab_lo, cd_lo));
  store(2, _mm_unpacklo_epi64(ab_hi, cd_hi));
  store(3, _mm_unpackhi_epi64(ab_hi, cd_hi));
}
#endif

// out[o] = in[offset(o)] where the input's contiguous axis is output axis q (< r - 1) and the
// output's last axis reads the input with stride `strides[r - 1]`: a batch of 2-D transposes,
// copied in 16 x 16 tiles so that both sides touch whole cache lines.
template <class U>
void tiled_transpose(const U* src, U* dst, const Shape& out_shape, const std::vector<int64_t>& strides, size_t q,
                     int64_t first, int64_t last) {
  constexpr int64_t T = 16;
  const size_t r = out_shape.size();
  const std::vector<int64_t> ostr = shape_strides(out_shape);
  const int64_t ni = out_shape[q], nj = out_shape[r - 1], sj = strides[r - 1], oi = ostr[q];
  std::vector<size_t> other;
  for (size_t d = 0; d + 1 < r; ++d)
    if (d != q) other.push_back(d);
  std::vector<int64_t> idx(other.size(), 0);
  int64_t in_base = 0, out_base = 0;
  for (size_t k = other.size(), rest = static_cast<size_t>(first); k-- > 0;) {  // batch `first`'s position
    const size_t d = other[k];
    idx[k] = static_cast<int64_t>(rest % static_cast<size_t>(out_shape[d]));
    rest /= static_cast<size_t>(out_shape[d]);
    in_base += idx[k] * strides[d];
    out_base += idx[k] * ostr[d];
  }
  for (int64_t b = first; b < last; ++b) {
    for (int64_t i0 = 0; i0 < ni; i0 += T) {
      const int64_t i1 = std::min(ni, i0 + T);
      for (int64_t j0 = 0; j0 < nj; j0 += T) {
        const int64_t j1 = std::min(nj, j0 + T);
        int64_t i = i0;
#ifdef __SSE2__
        if constexpr (sizeof(U) == 4) {  // whole 4 x 4 blocks through SSE2 registers
          for (; i + 4 <= i1; i += 4) {
            int64_t j = j0;
            for (; j + 4 <= j1; j += 4) transpose4x4(src + in_base + i + j * sj, sj, dst + out_base + i * oi + j, oi);
            for (; j < j1; ++j)
              for (int64_t k = 0; k < 4; ++k) dst[out_base + (i + k) * oi + j] = src[in_base + i + k + j * sj];
          }
        }
#endif
        for (; i < i1; ++i) {
          U* d = dst + out_base + i * oi;
          const U* s = src + in_base + i;
          for (int64_t j = j0; j < j1; ++j) d[j] = s[j * sj];
        }
      }
    }
    for (size_t k = other.size(); k-- > 0;) {  // odometer over the other output axes
      const size_t d = other[k];
      in_base += strides[d];
      out_base += ostr[d];
      if (++idx[k] < out_shape[d]) break;
      in_base -= strides[d] * idx[k];
      out_base -= ostr[d] * idx[k];
      idx[k] = 0;
    }
  }
}

}  // namespace

Shape permuted_shape(const Shape& s, const std::vector<int64_t>& perm) {
  Shape out(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) out[d] = s[static_cast<size_t>(perm[d])];
  return out;
}

template <int C>
void interleave_rows(const float* src, float* dst, int64_t n, int64_t plane) {
  int64_t i = 0;
#ifdef __SSE2__
  if constexpr (C == 1) {
    std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(n));
    return;
  }
  const float *a = src, *b = src + plane, *c = src + 2 * plane;
  for (; i + 4 <= n; i += 4) {  // 4 pixels: a0 b0 (c0) a1 b1 (c1) a2 b2 (c2) a3 b3 (c3)
    const __m128 va = _mm_loadu_ps(a + i), vb = _mm_loadu_ps(b + i);
    float* o = dst + i * C;
    if constexpr (C == 2) {
      _mm_storeu_ps(o, _mm_unpacklo_ps(va, vb));
      _mm_storeu_ps(o + 4, _mm_unpackhi_ps(va, vb));
    } else {
      const __m128 vc = _mm_loadu_ps(c + i);
      _mm_storeu_ps(o, _mm_shuffle_ps(_mm_unpacklo_ps(va, vb), _mm_unpacklo_ps(vc, va), _MM_SHUFFLE(3, 0, 1, 0)));
      _mm_storeu_ps(o + 4, _mm_shuffle_ps(_mm_unpacklo_ps(vb, vc), _mm_unpackhi_ps(va, vb), _MM_SHUFFLE(1, 0, 3, 2)));
      _mm_storeu_ps(o + 8, _mm_shuffle_ps(_mm_unpackhi_ps(vc, va), _mm_unpackhi_ps(vb, vc), _MM_SHUFFLE(3, 2, 3, 0)));
    }
  }
#endif
  for (; i < n; ++i)
    for (int k = 0; k < C; ++k) dst[i * C + k] = src[k * plane + i];
}

// Three planes of bytes interleaved (an image of 8-bit codes made N,H,W,C): 16 pixels, 48
// output bytes, each output vector the OR of three byte shuffles (SSSE3, in the AVX2 build).
JOULE_AVX2 void interleave3_bytes_avx2(const uint8_t* src, uint8_t* dst, int64_t n, int64_t plane) {
  // masks[3 j + k]: where output vector j takes bytes of plane k (-128: none)
  static const auto masks = [] {
    std::array<std::array<int8_t, 16>, 9> m{};
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k)
        for (int t = 0; t < 16; ++t) {
          const int b = 16 * j + t;
          m[static_cast<size_t>(3 * j + k)][static_cast<size_t>(t)] = b % 3 == k ? static_cast<int8_t>(b / 3) : int8_t{-128};
        }
    return m;
  }();
  auto load = [](const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); };
  const uint8_t *a = src, *b = src + plane, *c = src + 2 * plane;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i va = load(a + i), vb = load(b + i), vc = load(c + i);
    for (size_t j = 0; j < 3; ++j) {
      const __m128i o = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(va, load(masks[3 * j].data())),
                                                  _mm_shuffle_epi8(vb, load(masks[3 * j + 1].data()))),
                                     _mm_shuffle_epi8(vc, load(masks[3 * j + 2].data())));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 3 * i + 16 * static_cast<int64_t>(j)), o);
    }
  }
  for (; i < n; ++i)
    for (int k = 0; k < 3; ++k) dst[i * 3 + k] = src[k * plane + i];
}

// Output rows [first, last) of a transpose whose output is [..., L, C] with C <= 3 taken from C
// planes of L contiguous elements (`strides` as in tiled_transpose).
// The same for 1-, 2- and 8-byte elements (an image of codes quantized before it is made
// N,H,W,C; three planes of bytes have their own kernel above): a plain loop, the channels
// unrolled.
template <class U, int C>
void interleave_rows_any(const U* src, U* dst, int64_t n, int64_t plane) {
  for (int64_t i = 0; i < n; ++i)
    for (int k = 0; k < C; ++k) dst[i * C + k] = src[k * plane + i];
}

template <class U>
void interleave_planes(const U* src, U* dst, const Shape& out_shape, const std::vector<int64_t>& strides,
                       int64_t first, int64_t last) {
  const size_t r = out_shape.size();
  const int64_t n = out_shape[r - 2], c = out_shape[r - 1], plane = strides[r - 1];
  const bool bytes3 = sizeof(U) == 1 && c == 3 && cpu_features().avx2_fma;
  for (int64_t b = first; b < last; ++b) {
    int64_t in = 0;
    for (size_t d = r - 2, rest = static_cast<size_t>(b); d-- > 0;) {
      in += static_cast<int64_t>(rest % static_cast<size_t>(out_shape[d])) * strides[d];
      rest /= static_cast<size_t>(out_shape[d]);
    }
    U* o = dst + b * n * c;
    if constexpr (std::is_same_v<U, float>) {
      if (c == 1) interleave_rows<1>(src + in, o, n, plane);
      else if (c == 2) interleave_rows<2>(src + in, o, n, plane);
      else interleave_rows<3>(src + in, o, n, plane);
    } else if (bytes3) {
      interleave3_bytes_avx2(reinterpret_cast<const uint8_t*>(src + in), reinterpret_cast<uint8_t*>(o), n, plane);
    } else {
      if (c == 1) interleave_rows_any<U, 1>(src + in, o, n, plane);
      else if (c == 2) interleave_rows_any<U, 2>(src + in, o, n, plane);
      else interleave_rows_any<U, 3>(src + in, o, n, plane);
    }
  }
}

void transpose_into(const Tensor& x, const std::vector<int64_t>& perm, Tensor& out, ThreadPool* pool) {
  const auto in_strides = shape_strides(x.shape());
  const Shape out_shape = permuted_shape(x.shape(), perm);
  std::vector<int64_t> strides(perm.size());
  size_t q = perm.size();  // the output axis that is the input's last (contiguous) axis
  for (size_t d = 0; d < perm.size(); ++d) {
    strides[d] = in_strides[static_cast<size_t>(perm[d])];
    if (static_cast<size_t>(perm[d]) + 1 == perm.size()) q = d;
  }
  // A few planes interleaved into a short last axis (an N,C,H,W image of 1 to 3 channels made
  // N,H,W,C): one pass over each output row.
  const size_t r = perm.size();
  if (r >= 2 && q == r - 2 && out_shape.back() >= 1 && out_shape.back() <= 3 && out_shape[q] >= 16 &&
      x.dtype() != DType::String && x.numel() > 0) {
    const int64_t rows = x.numel() / (out_shape[q] * out_shape.back());
    const int64_t parts = pool ? std::min<int64_t>({pool->threads(), rows, x.numel() / 65536}) : 1;
    auto run = [&](int64_t b, int64_t e) {
      visit_elem_bytes(x.dtype(), [&](auto tag) {
        using U = typename decltype(tag)::type;
        if constexpr (sizeof(U) == 4)  // float's SSE2 shuffles move any 4-byte element
          interleave_planes<float>(static_cast<const float*>(x.raw()), static_cast<float*>(out.raw()), out_shape, strides, b, e);
        else
          interleave_planes<U>(static_cast<const U*>(x.raw()), static_cast<U*>(out.raw()), out_shape, strides, b, e);
      });
    };
    if (parts <= 1)
      run(0, rows);
    else
      pool->parallel_for(parts, [&](int64_t b, int64_t e) { run(rows * b / parts, rows * e / parts); });
    return;
  }
  // Rows that are contiguous in the input (or too short to tile) go through strided_copy.
  if (q + 1 >= perm.size() || out_shape[q] < 4 || out_shape.back() < 4 || x.numel() == 0) {
    strided_copy_into(x, out_shape, strides, 0, out);
    return;
  }
  const int64_t batches = shape_numel(out_shape) / (out_shape[q] * out_shape.back());
  // a split only where each thread gets at least 64K elements
  const int64_t parts = pool ? std::min<int64_t>({pool->threads(), batches, x.numel() / 65536}) : 1;
  visit_elem_bytes(x.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = static_cast<const U*>(x.raw());
    U* dst = static_cast<U*>(out.raw());
    if (parts <= 1)
      tiled_transpose(src, dst, out_shape, strides, q, 0, batches);
    else
      pool->parallel_for(parts, [&](int64_t b, int64_t e) {
        tiled_transpose(src, dst, out_shape, strides, q, batches * b / parts, batches * e / parts);
      });
  });
}

Tensor transpose_tensor(const Tensor& x, const std::vector<int64_t>& perm) {
  Tensor out(x.dtype(), permuted_shape(x.shape(), perm));
  transpose_into(x, perm, out, nullptr);
  return out;
}

Tensor transpose_reference(const Tensor& x, const std::vector<int64_t>& perm) {
  const auto in_strides = shape_strides(x.shape());
  std::vector<int64_t> strides(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) strides[d] = in_strides[static_cast<size_t>(perm[d])];
  return strided_copy(x, permuted_shape(x.shape(), perm), strides, 0);
}

Tensor mapped_copy(const Tensor& in, const Shape& out_shape,
                   const std::vector<std::vector<int64_t>>& maps, const Tensor* fill) {
  Tensor out(in.dtype(), out_shape);
  const int64_t n = out.numel();
  if (n == 0) return out;
  const size_t r = out_shape.size();
  const auto in_strides = shape_strides(in.shape());
  // offsets[d][o]: element offset contributed by output index o along d, or -1 for fill
  std::vector<std::vector<int64_t>> offsets(r);
  for (size_t d = 0; d < r; ++d) {
    offsets[d].resize(static_cast<size_t>(out_shape[d]));
    for (size_t o = 0; o < offsets[d].size(); ++o) {
      int64_t m = maps[d][o];
      offsets[d][o] = m < 0 ? -1 : m * in_strides[d];
    }
  }
  visit_elem_bytes(in.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = static_cast<const U*>(in.raw());
    U* dst = static_cast<U*>(out.raw());
    U fv{};
    if (fill) std::memcpy(&fv, fill->raw(), sizeof(U));
    if (r == 0) {
      dst[0] = src[0];
      return;
    }
    const auto& last = offsets[r - 1];
    const int64_t inner = out_shape[r - 1];
    const int64_t outer = n / inner;
    std::vector<int64_t> idx(r - 1, 0);
    for (int64_t o = 0; o < outer; ++o) {
      int64_t base = 0;
      bool filled = false;
      for (size_t d = 0; d + 1 < r; ++d) {
        int64_t v = offsets[d][static_cast<size_t>(idx[d])];
        if (v < 0) filled = true;
        base += v;
      }
      U* row = dst + o * inner;
      if (filled) {
        for (int64_t j = 0; j < inner; ++j) row[j] = fv;
      } else {
        for (int64_t j = 0; j < inner; ++j) {
          int64_t v = last[static_cast<size_t>(j)];
          row[j] = v < 0 ? fv : src[base + v];
        }
      }
      for (size_t d = r - 1; d-- > 0;) {
        if (++idx[d] < out_shape[d]) break;
        idx[d] = 0;
      }
    }
  });
  return out;
}

std::vector<int64_t> index_values(const Tensor& t, const ir::Node& node, const char* what) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::Int64) {
    const int64_t* p = t.data<int64_t>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = p[i];
  } else if (t.dtype() == DType::Int32) {
    const int32_t* p = t.data<int32_t>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = p[i];
  } else {
    fail(node.where() + ": " + what + " must be int32 or int64, got " + dtype_name(t.dtype()));
  }
  return v;
}

int64_t normalize_index(int64_t i, int64_t dim, const ir::Node& node) {
  int64_t j = i < 0 ? i + dim : i;
  if (j < 0 || j >= dim)
    fail(node.where() + ": index " + std::to_string(i) + " out of range for dimension " +
         std::to_string(dim));
  return j;
}

DType dtype_from_onnx(int64_t code, const ir::Node& node) {
  DType t = joule::dtype_from_onnx(static_cast<int>(code));
  if (t == DType::Undefined || t == DType::String)
    fail_unsupported(node.where() + ": ONNX data type " + std::to_string(code) + " is not supported here");
  return t;
}

AxisSlice slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (dim == 0) return {};
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  AxisSlice r;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    r.start = start;
    r.count = end > start ? (end - start - 1) / step + 1 : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    const int64_t s = step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
    r.start = start;
    r.count = start > end ? (start - end - 1) / s + 1 : 0;
  }
  return r;
}

void normalize_slice_params(SliceParams& p, int64_t r, const ir::Node& node) {
  if (p.starts.size() != p.ends.size()) fail(node.where() + ": starts and ends have different lengths");
  if (p.axes.empty())
    for (size_t i = 0; i < p.starts.size(); ++i) p.axes.push_back(static_cast<int64_t>(i));
  if (p.steps.empty()) p.steps.assign(p.starts.size(), 1);
  if (p.axes.size() != p.starts.size() || p.steps.size() != p.starts.size())
    fail(node.where() + ": starts, ends, axes and steps must have the same length");
  std::vector<bool> seen(static_cast<size_t>(r), false);
  for (auto& a : p.axes) {
    a = normalize_axis(a, r, node);
    if (seen[static_cast<size_t>(a)]) fail(node.where() + ": repeated axis in axes");
    seen[static_cast<size_t>(a)] = true;
  }
  for (int64_t s : p.steps)
    if (s == 0) fail(node.where() + ": step must not be 0");
}

SliceView slice_view(const Shape& in, const SliceParams& p) {
  const std::vector<int64_t> in_strides = shape_strides(in);
  SliceView v{in, in_strides, 0};
  for (size_t i = 0; i < p.axes.size(); ++i) {
    const size_t a = static_cast<size_t>(p.axes[i]);
    const AxisSlice s = slice_axis(in[a], p.starts[i], p.ends[i], p.steps[i]);
    v.shape[a] = s.count;
    if (s.count == 0) continue;
    v.offset += s.start * in_strides[a];
    if (s.count > 1) v.strides[a] = in_strides[a] * p.steps[i];  // |step| < dim here
  }
  return v;
}

Tensor filled(const Tensor& value, const Shape& shape) {
  // The result's size is checked before the index maps (one entry per index of each dim) are
  // made; an empty result may have huge other dims ([2^48, 0]): no maps for it.
  if (checked_nbytes(value.dtype(), shape) == 0) return Tensor(value.dtype(), shape);
  const Tensor src = one_element(value).reshaped(Shape(shape.size(), 1));
  std::vector<std::vector<int64_t>> maps;
  for (int64_t d : shape) maps.emplace_back(static_cast<size_t>(d), 0);
  return mapped_copy(src, shape, maps);
}

Tensor one_element(const Tensor& t) {
  Tensor r(t.dtype(), {});
  if (t.numel() >= 1) std::memcpy(r.raw(), t.raw(), dtype_size(t.dtype()));
  return r;
}

Reduction parse_reduction(const ir::Node& node, int64_t opset) {
  const std::string r = node.attr_string("reduction", "none");
  if (r == "none") return Reduction::None;
  if (r == "add" && opset >= 16) return Reduction::Add;
  if (r == "mul" && opset >= 16) return Reduction::Mul;
  if (r == "max" && opset >= 18) return Reduction::Max;
  if (r == "min" && opset >= 18) return Reduction::Min;
  fail(node.where() + ": reduction '" + r + "' is not valid at opset " + std::to_string(opset));
}

namespace {
template <class T>
T reduce_pair(Reduction r, T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return (r == Reduction::Add || r == Reduction::Max) ? (a || b) : (a && b);
  } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T(reduce_pair<float>(r, static_cast<float>(a), static_cast<float>(b)));
  } else {
    switch (r) {
      case Reduction::Add: return static_cast<T>(a + b);
      case Reduction::Mul: return static_cast<T>(a * b);
      case Reduction::Max: return a < b ? b : a;
      case Reduction::Min: return b < a ? b : a;
      default: return b;
    }
  }
}
}  // namespace

void scatter_slices(Tensor& out, const Tensor& updates, const std::vector<int64_t>& dst_offsets,
                    int64_t slice, Reduction r, const ir::Node& node) {
  if (updates.dtype() != out.dtype())
    fail(node.where() + ": updates dtype " + dtype_name(updates.dtype()) + " differs from data " +
         dtype_name(out.dtype()));
  const size_t n = static_cast<size_t>(slice);
  if (r == Reduction::None) {
    const size_t es = dtype_size(out.dtype());
    auto* dst = static_cast<std::byte*>(out.raw());
    const auto* src = static_cast<const std::byte*>(updates.raw());
    for (size_t k = 0; k < dst_offsets.size(); ++k)
      std::memcpy(dst + static_cast<size_t>(dst_offsets[k]) * es, src + k * n * es, n * es);
    return;
  }
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = static_cast<T*>(out.raw());
    const T* src = static_cast<const T*>(updates.raw());
    for (size_t k = 0; k < dst_offsets.size(); ++k) {
      T* d = dst + dst_offsets[k];
      const T* s = src + k * n;
      for (size_t j = 0; j < n; ++j) d[j] = reduce_pair<T>(r, d[j], s[j]);
    }
  });
}

}  // namespace joule::ops::movement
