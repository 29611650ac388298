// The "simd" algorithm of the quantize op class: QuantizeLinear (ONNX's, and joule's with a
// Relu/Clip folded in as clip_min/clip_max) from float32 to int8/uint8, and DequantizeLinear from
// int8/uint8 to float32, with constant per-tensor or per-axis scale and zero point. The span
// arithmetic is the reference kernel's (ops/quantize_util.h: a float division per element, as
// ONNX Runtime, so the codes agree bit for bit); this kernel plans the parameters once and
// splits the spans over threads. A joule QuantizeLinear with a fused Add or Mul (fuse_quantize:
// B broadcast as [P, 1, R] over the input viewed as [P, Q, R], per-tensor parameters) computes
// x op B into a small buffer per span and quantizes it: one pass over the input and no float
// tensor written, the same float arithmetic as the separate ops.
#include <limits>

#include "joule/core/error.h"
#include "joule/kernels/eltwise/eltwise.h"
#include "joule/ops/quantize_util.h"
#include "joule/ops/util.h"

namespace joule::kernels {
namespace {

struct Plan {
  bool quantize = true;
  DType codes = DType::UInt8;
  Shape shape;
  int64_t outer = 1, channels = 1, inner = 1;  // per axis: outer x channels x inner
  std::vector<float> scale, zero;
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  char binary = 0;  // '+' or '*': the fused Add or Mul, B broadcast as [bp, 1, br] over [bp, bq, br]
  int64_t bp = 1, bq = 1, br = 1;
};

std::string read(const NodeView& v, Plan* p) {
  const ir::Node& n = v.node;
  p->quantize = n.op_type == "QuantizeLinear";
  if (n.attr_int("block_size", 0) != 0) return "blocked quantization";
  if (!v.static_shape(0, &p->shape)) return "the input shape is not static";
  const DType in = v.in_types[0]->dtype;
  if (!v.out_types.empty() && v.out_types[0]) p->codes = p->quantize ? v.out_types[0]->dtype : in;
  if (p->codes != DType::UInt8 && p->codes != DType::Int8) return std::string("codes are ") + dtype_name(p->codes);
  if ((p->quantize ? in : v.out_types[0]->dtype) != DType::Float32) return "the float side is not float32";
  const Tensor* s = v.constant(1);
  if (!s || s->dtype() != DType::Float32 || s->rank() > 1) return "scale is not a float32 constant scalar or vector";
  const Tensor* z = v.has(2) ? v.constant(2) : nullptr;
  if (v.has(2) && (!z || z->numel() != s->numel())) return "zero point is not a constant of the scale's size";
  const int64_t r = static_cast<int64_t>(p->shape.size());
  p->inner = shape_numel(p->shape);
  if (s->numel() != 1) {  // per axis (a one-element scale is per tensor, as in the reference)
    int64_t axis = n.attr_int("axis", 1);
    if (axis < -r || axis >= r) return "axis out of range";
    if (axis < 0) axis += r;
    if (p->shape[static_cast<size_t>(axis)] != s->numel()) return "scale does not match the axis";
    p->outer = p->inner = 1;
    for (int64_t d = 0; d < axis; ++d) p->outer *= p->shape[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < r; ++d) p->inner *= p->shape[static_cast<size_t>(d)];
    p->channels = s->numel();
  }
  for (int64_t i = 0; i < s->numel(); ++i) {
    p->scale.push_back(s->data<float>()[i]);
    p->zero.push_back(z ? static_cast<float>(z->value_as_int(i)) : 0.f);
  }
  if (n.domain == "joule") {
    p->lo = n.attr_float("clip_min", p->lo);
    p->hi = n.attr_float("clip_max", p->hi);
  }
  if (n.domain == "joule" && v.has(3)) {
    const std::string op = n.attr_string("binary", "");
    if (op != "Add" && op != "Mul") return "binary is not Add or Mul";
    p->binary = op == "Add" ? '+' : '*';
    Shape b;
    if (!v.static_shape(3, &b) || v.in_types[3]->dtype != DType::Float32) return "B is not float32 of a static shape";
    if (s->numel() != 1) return "a fused " + op + " with per-axis parameters";
    if (!ops::broadcast_as_pqr(p->shape, b, &p->bp, &p->bq, &p->br)) return "B " + shape_str(b) + " repeats over dims that are not contiguous";
  }
  return "";
}

class QuantizeKernel final : public Kernel {
 public:
  explicit QuantizeKernel(Plan p) : p_(std::move(p)) {}

  void run(ops::KernelContext& k) const override {
    const Tensor& x = k.in(0);
    const DType in = p_.quantize ? DType::Float32 : p_.codes;
    if (x.dtype() != in || x.shape() != p_.shape)
      fail(k.node.where() + ": the simd kernel was prepared for " + dtype_name(in) + shape_str(p_.shape) + ", got " + x.describe());
    Tensor& y = k.output(0, p_.quantize ? p_.codes : DType::Float32, p_.shape);
    if (p_.binary) {
      const Tensor& b = k.in(3);
      if (b.numel() != p_.bp * p_.br) fail(k.node.where() + ": the simd kernel was prepared for another B than " + b.describe());
      if (p_.codes == DType::UInt8) return fused<uint8_t>(x.data<float>(), b.data<float>(), y.data<uint8_t>(), k.pool);
      return fused<int8_t>(x.data<float>(), b.data<float>(), y.data<int8_t>(), k.pool);
    }
    if (p_.codes == DType::UInt8) return spans<uint8_t>(x, y, k.pool);
    spans<int8_t>(x, y, k.pool);
  }

 private:
  // y = Q(x op B) over n elements, with B's n values (`b_step` 1) or one value (`b_step` 0).
  template <class Q>
  void fused_span(const float* x, const float* b, int64_t b_step, Q* y, int64_t n) const {
    constexpr int64_t kChunk = 1024;
    alignas(64) float v[kChunk];
    for (int64_t i = 0; i < n; i += kChunk) {
      const int64_t m = std::min(kChunk, n - i);
      const float* xs = x + i;
      const float* bs = b + i * b_step;
      if (p_.binary == '*') {
        if (b_step) for (int64_t j = 0; j < m; ++j) v[j] = xs[j] * bs[j];
        else for (int64_t j = 0; j < m; ++j) v[j] = xs[j] * bs[0];
      } else {
        if (b_step) for (int64_t j = 0; j < m; ++j) v[j] = xs[j] + bs[j];
        else for (int64_t j = 0; j < m; ++j) v[j] = xs[j] + bs[0];
      }
      ops::quant::quantize_values<Q>(v, y + i, m, p_.scale[0], p_.zero[0], p_.lo, p_.hi);
    }
  }
  // y = Q(x op B) over rows [s, e) of R elements, row i against B's row i / Qn: one pass with
  // AVX-512 (ops::quant::quantize_gated_rows); elsewhere short rows (an N,H,W,C gate of few
  // channels) are gathered so that one quantize call covers up to kChunk values (one call per
  // 32-channel row took 54 ns: EfficientNet-B0's 112x112x32 gate 0.68 ms).
  template <class Q>
  void fused_rows(const float* x, const float* b, Q* y, int64_t s, int64_t e) const {
    constexpr int64_t kChunk = 1024;
    const int64_t R = p_.br, Qn = p_.bq;
    if (ops::quant::quantize_gated_rows<Q>(x + s * R, b, p_.binary, s, e - s, R, Qn, y + s * R, p_.scale[0], p_.zero[0],
                                           p_.lo, p_.hi))
      return;
    if (R > kChunk) {
      for (int64_t i = s; i < e; ++i) fused_span<Q>(x + i * R, b + (i / Qn) * R, 1, y + i * R, R);
      return;
    }
    alignas(64) float v[kChunk];
    const int64_t per = kChunk / R;
    for (int64_t i = s; i < e; i += per) {
      const int64_t rows = std::min(per, e - i);
      for (int64_t r = 0; r < rows; ++r) {
        const float* xs = x + (i + r) * R;
        const float* bs = b + ((i + r) / Qn) * R;
        float* vr = v + r * R;
        if (p_.binary == '*') for (int64_t j = 0; j < R; ++j) vr[j] = xs[j] * bs[j];
        else for (int64_t j = 0; j < R; ++j) vr[j] = xs[j] + bs[j];
      }
      ops::quant::quantize_values<Q>(v, y + i * R, rows * R, p_.scale[0], p_.zero[0], p_.lo, p_.hi);
    }
  }
  // Over [bp, bq, br]: rows of br elements against B's row p (br > 1), or runs of bq elements
  // against B's one value (br == 1: a per-channel N,C,H,W gate, or a scalar).
  template <class Q>
  void fused(const float* x, const float* b, Q* y, ThreadPool* pool) const {
    const int64_t P = p_.bp, Qn = p_.bq, R = p_.br;
    if (R == 1) {
      if (P == 1) return split_items(pool, Qn, 1, [&](int64_t s, int64_t e) { fused_span<Q>(x + s, b, 0, y + s, e - s); });
      return split_items(pool, P, Qn, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) fused_span<Q>(x + i * Qn, b + i, 0, y + i * Qn, Qn);
      });
    }
    if (P * Qn == 1) return split_items(pool, R, 1, [&](int64_t s, int64_t e) { fused_span<Q>(x + s, b + s, 1, y + s, e - s); });
    split_items(pool, P * Qn, R, [&](int64_t s, int64_t e) { fused_rows<Q>(x, b, y, s, e); });
  }

  // Per tensor: one span split over threads; per axis: the outer x channels spans over threads.
  template <class Q>
  void spans(const Tensor& x, Tensor& y, ThreadPool* pool) const {
    const int64_t items = p_.outer * p_.channels, inner = p_.inner;
    auto one = [&](int64_t item, int64_t b, int64_t e) {
      const size_t ch = static_cast<size_t>(item % p_.channels);
      const int64_t at = item * inner + b;
      if (p_.quantize)
        ops::quant::quantize_values<Q>(x.data<float>() + at, y.data<Q>() + at, e - b, p_.scale[ch], p_.zero[ch], p_.lo, p_.hi);
      else
        ops::quant::dequantize_values<Q>(x.data<Q>() + at, y.data<float>() + at, e - b, p_.scale[ch], p_.zero[ch]);
    };
    if (items == 1) {
      split_items(pool, inner, 1, [&](int64_t b, int64_t e) { one(0, b, e); });
      return;
    }
    split_items(pool, items, inner, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) one(i, 0, inner);
    });
  }

  Plan p_;
};

std::string supports(const NodeView& v) {
  Plan p;
  return read(v, &p);
}

// A division per element (quantize, ~0.1 ns at 16 lanes) or a multiply (dequantize), memory-bound.
double estimate_ms(const NodeView& v) {
  const double per = v.node.op_type == "QuantizeLinear" ? 0.15e-6 : 0.08e-6;
  return static_cast<double>(planned_numel(v, 0)) * per / std::max(1, v.threads) + 0.001;
}

std::unique_ptr<Kernel> prepare(const NodeView& v) {
  Plan p;
  if (std::string why = read(v, &p); !why.empty()) fail_internal(v.node.where() + ": " + why);
  return std::make_unique<QuantizeKernel>(std::move(p));
}

}  // namespace

bool is_quantize(const ir::Node& n) {
  if (n.domain == "joule") return n.op_type == "QuantizeLinear";
  return (n.domain.empty() || n.domain == "ai.onnx") && (n.op_type == "QuantizeLinear" || n.op_type == "DequantizeLinear");
}

extern const Algorithm kQuantizeSimd;
const Algorithm kQuantizeSimd{"quantize", "simd",
                              "QuantizeLinear (a folded Relu/Clip, Add or Mul included) and DequantizeLinear between float32 and "
                              "int8/uint8, constant per-tensor or per-axis parameters, vectorised, threaded",
                              supports, estimate_ms, prepare};

}  // namespace joule::kernels
