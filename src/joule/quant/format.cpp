#include "joule/quant/format.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <limits>

#include "joule/core/dtype.h"
#include "joule/core/error.h"

namespace joule::quant {

namespace {

// Compact number for messages: 448, 57344, 1.984375, 0.0078125.
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string granularity_text(const Format& f) {
  if (f.granularity == Granularity::PerTensor) return "per-tensor";
  return "per-channel(axis " + std::to_string(f.axis) + ")";
}

void check_range(const std::string& where, const char* field, int v, int lo, int hi) {
  if (v < lo || v > hi)
    fail(where + ": " + field + " must be " + std::to_string(lo) + ".." + std::to_string(hi) +
         ", got " + std::to_string(v));
}

// The named MiniFloat encodings. The rounding flags (denormals, saturate, scaled) are not part
// of a preset's identity: name() still says "fp8_e4m3" for a scaled or non-saturating E4M3FN.
struct MiniPreset {
  const char* name;
  int exp_bits, man_bits, bias;
  bool finite_only, has_nan;
};
constexpr MiniPreset kMiniPresets[] = {
    {"fp8_e4m3", 4, 3, 7, true, true},   {"fp8_e5m2", 5, 2, 15, false, true},
    {"fp6_e3m2", 3, 2, 3, true, false},  {"fp6_e2m3", 2, 3, 1, true, false},
    {"fp4_e2m1", 2, 1, 1, true, false},
};

// Largest exponent code that holds finite numbers, and the largest mantissa field there.
void top_finite_code(const Format& f, int& exp_code, int64_t& man) {
  const int all_ones = (1 << f.exp_bits) - 1;
  const int64_t man_all = (int64_t{1} << f.man_bits) - 1;
  if (!f.finite_only) {  // IEEE-like: the all-ones exponent is inf/NaN
    exp_code = all_ones - 1;
    man = man_all;
  } else if (!f.has_nan) {  // every code is a number
    exp_code = all_ones;
    man = man_all;
  } else if (f.man_bits >= 1) {  // only S.1..1.1..1 is NaN
    exp_code = all_ones;
    man = man_all - 1;
  } else {  // no mantissa bits: the whole all-ones exponent is the NaN code
    exp_code = all_ones - 1;
    man = man_all;
  }
}

// Rounding onto a MiniFloat grid, with the constants worked out once per tensor.
struct MiniGrid {
  int emin = 0;  // unbiased exponent of the smallest normal
  int man_bits = 0;
  double max = 0, min_normal = 0;
  bool denormals = true, saturate = true, finite_only = false;

  explicit MiniGrid(const Format& f)
      : emin(1 - f.effective_bias()),
        man_bits(f.man_bits),
        max(f.max_value()),
        min_normal(f.min_normal()),
        denormals(f.denormals),
        saturate(f.saturate),
        finite_only(f.finite_only) {}

  float overflow(float x) const {
    if (saturate) return std::copysign(static_cast<float>(max), x);
    if (finite_only) return std::numeric_limits<float>::quiet_NaN();
    return std::copysign(std::numeric_limits<float>::infinity(), x);
  }

  float round(float x) const {
    if (std::isnan(x)) return x;
    if (std::isinf(x)) return overflow(x);
    const double a = std::fabs(static_cast<double>(x));
    if (a == 0) return x;  // keeps -0
    int ex;
    std::frexp(a, &ex);  // a = m * 2^ex, m in [0.5, 1): floor(log2 a) = ex - 1
    double spacing;
    if (a < min_normal && !denormals) {
      spacing = min_normal;  // the grid below the smallest normal is just {0, min_normal}
    } else {
      spacing = std::ldexp(1.0, std::max(ex - 1, emin) - man_bits);
    }
    // a / spacing is exact (power of two); nearbyint is ties-to-even on the significand, which
    // is ties-to-even on the mantissa field. A carry into the next binade is still on the grid.
    const double t = a / spacing;
    double r = std::nearbyint(t) * spacing;
    if (man_bits == 0 && t == 1.5 && ex - 1 >= emin) {
      // No mantissa bits: a tie between 2^E and 2^(E+1) goes to the even *code*, i.e. the even
      // biased exponent, not to the even significand (which would always round up).
      r = ((ex - emin) % 2 == 0) ? spacing : 2 * spacing;  // code of 2^E is E + bias = ex - emin
    }
    if (r > max) return overflow(x);
    return std::copysign(static_cast<float>(r), x);
  }
};

int64_t numel(const std::vector<int64_t>& shape, const char* where) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail(std::string(where) + ": negative dimension " + std::to_string(d) + " in shape");
    n *= d;
  }
  return n;
}

// Row-major tensor seen as [outer, channels, inner]; per-tensor is [1, 1, n].
struct ChannelLayout {
  int64_t outer = 1, channels = 1, inner = 1;
};

ChannelLayout channel_layout(const Format& f, const QParams& q, const std::vector<int64_t>& shape,
                             bool need_zp, const char* where) {
  ChannelLayout l;
  const int64_t n = numel(shape, where);
  size_t want = 1;
  if (f.granularity == Granularity::PerTensor) {
    l.inner = n;
  } else {
    const int rank = static_cast<int>(shape.size());
    const int axis = f.axis < 0 ? f.axis + rank : f.axis;
    if (axis < 0 || axis >= rank)
      fail(std::string(where) + ": per-channel axis " + std::to_string(f.axis) +
           " out of range for rank " + std::to_string(rank));
    for (int i = 0; i < axis; ++i) l.outer *= shape[i];
    l.channels = shape[axis];
    for (int i = axis + 1; i < rank; ++i) l.inner *= shape[i];
    want = static_cast<size_t>(l.channels);
  }
  if (q.scale.size() != want)
    fail(std::string(where) + ": " + f.name() + " needs " + std::to_string(want) +
         " scale(s), got " + std::to_string(q.scale.size()));
  if (need_zp && q.zero_point.size() != want)
    fail(std::string(where) + ": " + f.name() + " needs " + std::to_string(want) +
         " zero point(s), got " + std::to_string(q.zero_point.size()));
  for (size_t c = 0; c < q.scale.size(); ++c)
    if (!(q.scale[c] > 0) || !std::isfinite(q.scale[c]))
      fail(std::string(where) + ": scale[" + std::to_string(c) + "] = " + num(q.scale[c]) +
           " is not a positive finite number");
  if (need_zp)
    for (size_t c = 0; c < q.zero_point.size(); ++c)
      if (q.zero_point[c] < f.qmin() || q.zero_point[c] > f.qmax())
        fail(std::string(where) + ": zero_point[" + std::to_string(c) + "] = " +
             std::to_string(q.zero_point[c]) + " outside " + f.name() + " range");
  return l;
}

// Calls fn(channel, first_index, count) for every contiguous run of one channel.
template <class Fn>
void for_each_run(const ChannelLayout& l, Fn&& fn) {
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t c = 0; c < l.channels; ++c) fn(c, (o * l.channels + c) * l.inner, l.inner);
}

// ONNX QuantizeLinear exactly as onnxruntime's MLAS reference computes it: the division, the
// rounding (nearbyint, ties to even in the default rounding mode), the zero-point add and the
// clamp all happen in float.
inline int32_t int_code(float x, float scale, int32_t zp, float lo, float hi) {
  if (std::isnan(x)) return zp;
  float v = std::nearbyint(x / scale) + static_cast<float>(zp);
  v = std::min(std::max(v, lo), hi);
  return static_cast<int32_t>(v);
}

inline float int_value(int32_t code, float scale, int32_t zp) {
  return static_cast<float>(code - zp) * scale;
}

void fake_fixed(const Format& f, int64_t n, const float* x, float* y) {
  const double unit = std::ldexp(1.0, f.frac_bits);
  const double hi = std::ldexp(1.0, f.bits - 1) - 1, lo = -std::ldexp(1.0, f.bits - 1);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (std::isnan(v)) {
      y[i] = v;
      continue;
    }
    // x * 2^frac is exact in double, so only the one rounding the definition asks for happens
    // (the final cast can round again only for widths above float's 24-bit significand).
    const double k = std::clamp(std::nearbyint(static_cast<double>(v) * unit), lo, hi);
    y[i] = static_cast<float>(k / unit);
  }
}

void fake_block(const Format& f, const std::vector<int64_t>& shape, int64_t n, const float* x,
                float* y) {
  const int64_t row = shape.empty() ? 1 : shape.back();
  if (row == 0 || n == 0) return;
  const double mmax = std::ldexp(1.0, f.bits - 1) - 1, mmin = -std::ldexp(1.0, f.bits - 1);
  for (int64_t r0 = 0; r0 < n; r0 += row) {
    for (int64_t b0 = r0; b0 < r0 + row; b0 += f.block) {
      const int64_t b1 = std::min<int64_t>(b0 + f.block, r0 + row);
      float amax = 0;
      for (int64_t i = b0; i < b1; ++i)
        if (std::isfinite(x[i])) amax = std::max(amax, std::fabs(x[i]));
      if (amax == 0) {  // all-zero (or non-finite) block: nothing to round
        if (x != y) std::copy(x + b0, x + b1, y + b0);
        continue;
      }
      // ilogb is floor(log2 |x|) exactly, subnormals included. The element of largest magnitude
      // lands in [2^(bits-2), 2^(bits-1)) steps, using the full mantissa width.
      const double step = std::ldexp(1.0, std::ilogb(amax) - (f.bits - 2));
      for (int64_t i = b0; i < b1; ++i) {
        const float v = x[i];
        if (!std::isfinite(v)) {
          y[i] = v;
          continue;
        }
        const double m = std::clamp(std::nearbyint(static_cast<double>(v) / step), mmin, mmax);
        y[i] = static_cast<float>(m * step);
      }
    }
  }
}

}  // namespace

bool Format::needs_calibration() const {
  return kind == FormatKind::Int || (kind == FormatKind::MiniFloat && scaled);
}

int64_t Format::qmin() const {
  if (kind != FormatKind::Int) fail_internal("qmin() called on non-integer format " + name());
  if (is_signed) return narrow_range ? -(int64_t{1} << (bits - 1)) + 1 : -(int64_t{1} << (bits - 1));
  return narrow_range ? 1 : 0;
}

int64_t Format::qmax() const {
  if (kind != FormatKind::Int) fail_internal("qmax() called on non-integer format " + name());
  return is_signed ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
}

int Format::effective_bias() const {
  if (bias != -1) return bias;
  return exp_bits >= 1 && exp_bits <= 16 ? (1 << (exp_bits - 1)) - 1 : 0;  // guard: unvalidated
}

double Format::min_normal() const { return std::ldexp(1.0, 1 - effective_bias()); }

double Format::max_value() const {
  int exp_code;
  int64_t man;
  top_finite_code(*this, exp_code, man);
  const int b = effective_bias();
  if (exp_code == 0)  // no normal numbers at all: the largest subnormal (if kept)
    return denormals ? std::ldexp(static_cast<double>(man), 1 - b - man_bits) : 0.0;
  return std::ldexp(static_cast<double>((int64_t{1} << man_bits) + man), exp_code - b - man_bits);
}

std::string Format::name() const {
  switch (kind) {
    case FormatKind::None: return "fp32";
    case FormatKind::Int: return (is_signed ? "int" : "uint") + std::to_string(bits);
    case FormatKind::Fixed: return "fixed" + std::to_string(bits) + "." + std::to_string(frac_bits);
    case FormatKind::Float16: return "fp16";
    case FormatKind::BFloat16: return "bf16";
    case FormatKind::MiniFloat: {
      const int b = effective_bias();
      for (const auto& p : kMiniPresets)
        if (p.exp_bits == exp_bits && p.man_bits == man_bits && p.bias == b &&
            p.finite_only == finite_only && (!finite_only || p.has_nan == has_nan))
          return p.name;
      std::string s = "e" + std::to_string(exp_bits) + "m" + std::to_string(man_bits);
      if (finite_only) s += has_nan ? "fn" : "fnn";  // finite with a NaN code / no NaN either
      if (bias != -1 && exp_bits >= 1 && exp_bits <= 16 && bias != (1 << (exp_bits - 1)) - 1)
        s += "_b" + std::to_string(bias);
      return s;
    }
    case FormatKind::BlockFloat: return "bfp" + std::to_string(bits) + "b" + std::to_string(block);
  }
  return "?";
}

std::string Format::describe() const {
  switch (kind) {
    case FormatKind::None: return "fp32 (not quantized)";
    case FormatKind::Int:
      return name() + (symmetric ? " symmetric" : " asymmetric") + (narrow_range ? " narrow" : "") +
             " " + granularity_text(*this);
    case FormatKind::Fixed:
      return name() + " (step 2^-" + std::to_string(frac_bits) + ", range [" +
             num(-std::ldexp(1.0, bits - 1 - frac_bits)) + ", " +
             num((std::ldexp(1.0, bits - 1) - 1) / std::ldexp(1.0, frac_bits)) + "])";
    case FormatKind::Float16: return "fp16 (IEEE half, round to nearest even)";
    case FormatKind::BFloat16: return "bf16 (bfloat16, round to nearest even)";
    case FormatKind::MiniFloat: {
      std::string s = name() + " (E" + std::to_string(exp_bits) + "M" + std::to_string(man_bits) +
                      " bias " + std::to_string(effective_bias()) + ", ";
      s += !finite_only ? "IEEE-like inf/NaN" : has_nan ? "finite with NaN code" : "finite, no NaN";
      s += ", max " + num(max_value()) + (denormals ? ", subnormals" : ", no subnormals");
      s += saturate ? ", saturating)" : finite_only ? ", overflow to NaN)" : ", overflow to inf)";
      if (scaled) s += " scaled " + granularity_text(*this);
      return s;
    }
    case FormatKind::BlockFloat:
      return name() + " (" + std::to_string(bits) + "-bit signed mantissas, one exponent per " +
             std::to_string(block) + " elements along the last axis)";
  }
  return "?";
}

void Format::validate(const std::string& where) const {
  const bool channel_ok = kind == FormatKind::Int || (kind == FormatKind::MiniFloat && scaled);
  if (granularity == Granularity::PerChannel && !channel_ok)
    fail(where + ": per-channel granularity needs an int or scaled minifloat format, not " + name());
  switch (kind) {
    case FormatKind::None:
    case FormatKind::Float16:
    case FormatKind::BFloat16: return;
    case FormatKind::Int: check_range(where, "int bits", bits, 2, 16); return;
    case FormatKind::Fixed:
      check_range(where, "fixed-point width (bits)", bits, 2, 32);
      check_range(where, "fixed-point frac_bits", frac_bits, 0, bits);
      return;
    case FormatKind::BlockFloat:
      check_range(where, "block-float mantissa bits", bits, 2, 16);
      check_range(where, "block-float block size", block, 1, 1 << 20);
      return;
    case FormatKind::MiniFloat: {
      check_range(where, "minifloat exp_bits", exp_bits, 1, 8);
      check_range(where, "minifloat man_bits", man_bits, 0, 23);
      if (bias < -1)
        fail(where + ": minifloat bias must be >= 0 (or -1 for the default), got " + std::to_string(bias));
      if (!finite_only && !has_nan)
        fail(where + ": minifloat has_nan=false needs finite_only (IEEE-like formats always have NaN)");
      if (finite_only && !has_nan && !saturate)
        fail(where + ": minifloat " + name() + " has no inf or NaN code, so it must saturate");
      // Every value must be exactly a float32, so rounding here and storing as float agree.
      int exp_code;
      int64_t man;
      top_finite_code(*this, exp_code, man);
      const int b = effective_bias();
      if (exp_code - b > 127)
        fail(where + ": minifloat bias " + std::to_string(b) + " puts values above float32 range");
      const int lowest = denormals ? 1 - b - man_bits : 1 - b;
      if (lowest < (denormals ? -149 : -126))
        fail(where + ": minifloat bias " + std::to_string(b) + " puts values below float32 range");
      if (!(max_value() > 0))
        fail(where + ": minifloat " + name() + " has no positive finite value");
      return;
    }
  }
}

Format int_format(int bits, bool symmetric, Granularity g, int axis) {
  Format f;
  f.kind = FormatKind::Int;
  f.bits = bits;
  f.symmetric = symmetric;
  f.is_signed = symmetric;
  f.granularity = g;
  f.axis = axis;
  return f;
}

Format minifloat_preset(const std::string& name) {
  Format f;
  if (name == "fp16") {
    f.kind = FormatKind::Float16;
    return f;
  }
  if (name == "bf16") {
    f.kind = FormatKind::BFloat16;
    return f;
  }
  for (const auto& p : kMiniPresets) {
    if (name != p.name) continue;
    f.kind = FormatKind::MiniFloat;
    f.exp_bits = p.exp_bits;
    f.man_bits = p.man_bits;
    f.bias = p.bias;
    f.finite_only = p.finite_only;
    f.has_nan = p.has_nan;
    return f;
  }
  fail("unknown float format '" + name +
       "' (expected fp8_e4m3, fp8_e5m2, fp6_e3m2, fp6_e2m3, fp4_e2m1, fp16 or bf16)");
}

QParams compute_qparams(const Format& f, const std::vector<float>& lo, const std::vector<float>& hi) {
  f.validate("compute_qparams");
  QParams q;
  if (!f.needs_calibration()) return q;
  if (lo.size() != hi.size() || lo.empty())
    fail("compute_qparams: " + std::to_string(lo.size()) + " lower and " + std::to_string(hi.size()) +
         " upper bounds given");
  if (f.granularity == Granularity::PerTensor && lo.size() != 1)
    fail("compute_qparams: per-tensor " + f.name() + " takes one range, got " + std::to_string(lo.size()));
  for (size_t c = 0; c < lo.size(); ++c)
    if (!std::isfinite(lo[c]) || !std::isfinite(hi[c]))
      fail("compute_qparams: range[" + std::to_string(c) + "] = [" + num(lo[c]) + ", " + num(hi[c]) +
           "] is not finite");

  for (size_t c = 0; c < lo.size(); ++c) {
    const double l = std::min<double>(lo[c], 0.0), h = std::max<double>(hi[c], 0.0);
    const double absmax = std::max(-l, h);
    double scale;
    int64_t zp = 0;
    if (f.kind == FormatKind::MiniFloat) {
      scale = absmax / f.max_value();
      if (scale < FLT_MIN) scale = 1;
    } else {
      const double qmin = static_cast<double>(f.qmin()), qmax = static_cast<double>(f.qmax());
      scale = f.symmetric ? absmax / ((qmax - qmin) / 2) : (h - l) / (qmax - qmin);
      if (scale < FLT_MIN) scale = 1;  // zero range, as onnxruntime
      // numpy.round (ties to even) in double, with the scale before its cast to float, as ORT.
      const double z = f.symmetric ? (qmin + qmax) / 2 : qmin - l / scale;
      zp = static_cast<int64_t>(std::clamp(std::nearbyint(z), qmin, qmax));
    }
    const float s = static_cast<float>(scale);
    if (!std::isfinite(s) || s <= 0)
      fail("compute_qparams: range[" + std::to_string(c) + "] = [" + num(lo[c]) + ", " + num(hi[c]) +
           "] gives scale " + num(scale) + ", not representable for " + f.name());
    q.scale.push_back(s);
    q.zero_point.push_back(static_cast<int32_t>(zp));
  }
  return q;
}

void fake_quantize(const Format& f, const QParams& q, const std::vector<int64_t>& shape,
                   const float* x, float* y) {
  f.validate("fake_quantize");
  const int64_t n = numel(shape, "fake_quantize");
  switch (f.kind) {
    case FormatKind::None:
      if (x != y) std::copy(x, x + n, y);
      return;
    case FormatKind::Int: {
      const ChannelLayout l = channel_layout(f, q, shape, true, "fake_quantize");
      const float lo = static_cast<float>(f.qmin()), hi = static_cast<float>(f.qmax());
      for_each_run(l, [&](int64_t c, int64_t i0, int64_t cnt) {
        const float s = q.scale[c];
        const int32_t zp = q.zero_point[c];
        for (int64_t i = i0; i < i0 + cnt; ++i) {
          const float v = x[i];
          y[i] = std::isnan(v) ? v : int_value(int_code(v, s, zp, lo, hi), s, zp);
        }
      });
      return;
    }
    case FormatKind::Fixed: fake_fixed(f, n, x, y); return;
    case FormatKind::Float16:
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(Half(x[i]));
      return;
    case FormatKind::BFloat16:
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(BFloat16(x[i]));
      return;
    case FormatKind::MiniFloat: {
      const MiniGrid g(f);
      if (!f.scaled) {
        for (int64_t i = 0; i < n; ++i) y[i] = g.round(x[i]);
        return;
      }
      const ChannelLayout l = channel_layout(f, q, shape, false, "fake_quantize");
      for_each_run(l, [&](int64_t c, int64_t i0, int64_t cnt) {
        const float s = q.scale[c];
        for (int64_t i = i0; i < i0 + cnt; ++i) y[i] = g.round(x[i] / s) * s;
      });
      return;
    }
    case FormatKind::BlockFloat: fake_block(f, shape, n, x, y); return;
  }
}

void quantize_int(const Format& f, const QParams& q, const std::vector<int64_t>& shape,
                  const float* x, int32_t* codes) {
  f.validate("quantize_int");
  if (f.kind != FormatKind::Int) fail("quantize_int: " + f.name() + " is not an integer format");
  const ChannelLayout l = channel_layout(f, q, shape, true, "quantize_int");
  const float lo = static_cast<float>(f.qmin()), hi = static_cast<float>(f.qmax());
  for_each_run(l, [&](int64_t c, int64_t i0, int64_t cnt) {
    for (int64_t i = i0; i < i0 + cnt; ++i) codes[i] = int_code(x[i], q.scale[c], q.zero_point[c], lo, hi);
  });
}

void dequantize_int(const Format& f, const QParams& q, const std::vector<int64_t>& shape,
                    const int32_t* codes, float* y) {
  f.validate("dequantize_int");
  if (f.kind != FormatKind::Int) fail("dequantize_int: " + f.name() + " is not an integer format");
  const ChannelLayout l = channel_layout(f, q, shape, true, "dequantize_int");
  for_each_run(l, [&](int64_t c, int64_t i0, int64_t cnt) {
    for (int64_t i = i0; i < i0 + cnt; ++i) y[i] = int_value(codes[i], q.scale[c], q.zero_point[c]);
  });
}

float minifloat_round(const Format& f, float x) {
  if (f.kind != FormatKind::MiniFloat) fail("minifloat_round: " + f.name() + " is not a minifloat format");
  f.validate("minifloat_round");
  return MiniGrid(f).round(x);
}

}  // namespace joule::quant
