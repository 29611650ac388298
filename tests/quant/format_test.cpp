#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "joule/core/dtype.h"
#include "joule/core/error.h"
#include "joule/quant/format.h"

using namespace joule;
using namespace joule::quant;

namespace {

uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Same float, bit for bit (tells 0 from -0).
::testing::AssertionResult same_float(float a, float b) {
  if (float_bits(a) == float_bits(b) || (std::isnan(a) && std::isnan(b)))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << a << " vs " << b;
}

float fq1(const Format& f, const QParams& q, float x) {
  float y;
  fake_quantize(f, q, {1}, &x, &y);
  return y;
}

int32_t code1(const Format& f, const QParams& q, float x) {
  int32_t c;
  quantize_int(f, q, {1}, &x, &c);
  return c;
}

Format int_fmt(int bits, bool is_signed, bool narrow, bool symmetric) {
  Format f = int_format(bits, symmetric);
  f.is_signed = is_signed;
  f.narrow_range = narrow;
  return f;
}

Format fixed_fmt(int width, int frac) {
  Format f;
  f.kind = FormatKind::Fixed;
  f.bits = width;
  f.frac_bits = frac;
  return f;
}

Format mini(int e, int m, bool finite_only, bool has_nan = true, int bias = -1) {
  Format f;
  f.kind = FormatKind::MiniFloat;
  f.exp_bits = e;
  f.man_bits = m;
  f.finite_only = finite_only;
  f.has_nan = has_nan;
  f.bias = bias;
  return f;
}

Format block_fmt(int bits, int block) {
  Format f;
  f.kind = FormatKind::BlockFloat;
  f.bits = bits;
  f.block = block;
  return f;
}

// ---- Int -------------------------------------------------------------------------------------

struct IntCase {
  bool is_signed, narrow, symmetric;
};
constexpr IntCase kIntCases[] = {
    {true, false, true},  {true, true, true},   {false, false, true}, {false, true, true},
    {true, false, false}, {false, false, false}, {false, true, false},
};

TEST(IntFormat, CodeRangeFromBitsSignednessNarrow) {
  EXPECT_EQ(int_fmt(8, true, false, true).qmin(), -128);
  EXPECT_EQ(int_fmt(8, true, false, true).qmax(), 127);
  EXPECT_EQ(int_fmt(8, true, true, true).qmin(), -127);
  EXPECT_EQ(int_fmt(8, false, false, false).qmin(), 0);
  EXPECT_EQ(int_fmt(8, false, false, false).qmax(), 255);
  EXPECT_EQ(int_fmt(8, false, true, false).qmin(), 1);
  EXPECT_EQ(int_fmt(4, true, false, true).qmin(), -8);
  EXPECT_EQ(int_fmt(16, false, false, false).qmax(), 65535);
  EXPECT_EQ(int_fmt(2, true, true, true).qmin(), -1);
  EXPECT_EQ(int_format(8, false).name(), "uint8");  // asymmetric defaults to unsigned
  EXPECT_TRUE(int_format(8, false).needs_calibration());
}

TEST(IntFormat, EveryCodeIsAFixedPointFor2To8Bits) {
  for (int bits = 2; bits <= 8; ++bits) {
    for (const IntCase& ic : kIntCases) {
      const Format f = int_fmt(bits, ic.is_signed, ic.narrow, ic.symmetric);
      const QParams q = compute_qparams(f, {-1.3f}, {2.7f});
      const float s = q.scale[0];
      const int32_t zp = q.zero_point[0];
      for (int64_t c = f.qmin(); c <= f.qmax(); ++c) {
        const float y = static_cast<float>(static_cast<int32_t>(c) - zp) * s;
        ASSERT_EQ(code1(f, q, y), c) << f.describe() << " code " << c;
        ASSERT_TRUE(same_float(fq1(f, q, y), y)) << f.describe() << " code " << c;
      }
    }
  }
}

TEST(IntFormat, HalfwayValuesRoundToEvenCode) {
  for (int bits = 2; bits <= 8; ++bits) {
    for (const IntCase& ic : kIntCases) {
      const Format f = int_fmt(bits, ic.is_signed, ic.narrow, ic.symmetric);
      // Power-of-two scale: every halfway point is exact in float, so the tie is a real tie.
      const int32_t zp = static_cast<int32_t>((f.qmin() + f.qmax() + 1) / 2);
      const QParams q{{0.25f}, {zp}};
      for (int64_t c = f.qmin(); c < f.qmax(); ++c) {
        const float mid = (static_cast<float>(c - zp) + 0.5f) * 0.25f;
        // The tie goes to the even value of (x/scale); zp shifts codes, not that parity.
        const int64_t even_offset = ((c - zp) % 2 == 0) ? c - zp : c - zp + 1;
        ASSERT_EQ(code1(f, q, mid), even_offset + zp) << f.describe() << " between " << c << ", " << c + 1;
        ASSERT_EQ(code1(f, q, std::nextafter(mid, -1e9f)), c);
        ASSERT_EQ(code1(f, q, std::nextafter(mid, 1e9f)), c + 1);
      }
    }
  }
}

TEST(IntFormat, SaturatesAndHandlesNonFinite) {
  for (const IntCase& ic : kIntCases) {
    const Format f = int_fmt(8, ic.is_signed, ic.narrow, ic.symmetric);
    const QParams q = compute_qparams(f, {-2.f}, {2.f});
    const float s = q.scale[0];
    const int32_t zp = q.zero_point[0];
    EXPECT_EQ(code1(f, q, 1000.f), f.qmax());
    EXPECT_EQ(code1(f, q, -1000.f), f.qmin());
    EXPECT_EQ(code1(f, q, std::numeric_limits<float>::infinity()), f.qmax());
    EXPECT_EQ(code1(f, q, -std::numeric_limits<float>::infinity()), f.qmin());
    EXPECT_EQ(code1(f, q, std::nanf("")), zp);
    EXPECT_TRUE(std::isnan(fq1(f, q, std::nanf(""))));
    EXPECT_TRUE(same_float(fq1(f, q, 1000.f), static_cast<float>(static_cast<int32_t>(f.qmax()) - zp) * s));
    EXPECT_EQ(fq1(f, q, 0.f), 0.f) << "zero must be exact";
  }
}

TEST(IntFormat, QParamsMatchOnnxRuntimeHandValues) {
  // ORT: [-1, 3] uint8 asymmetric -> scale 4/255, zp round(63.75) = 64.
  QParams q = compute_qparams(int_format(8, false), {-1.f}, {3.f});
  EXPECT_EQ(q.scale[0], static_cast<float>(4.0 / 255));
  EXPECT_EQ(q.zero_point[0], 64);
  // int8 asymmetric on the same range: zp = round(-128 + 63.75) = -64.
  Format s8a = int_format(8, false);
  s8a.is_signed = true;
  q = compute_qparams(s8a, {-1.f}, {3.f});
  EXPECT_EQ(q.scale[0], static_cast<float>(4.0 / 255));
  EXPECT_EQ(q.zero_point[0], -64);
  // Symmetric int8, absmax 2 -> 2/127.5, zp 0; narrow -> 2/127; uint8 symmetric -> zp 128.
  q = compute_qparams(int_format(8, true), {-0.5f}, {2.f});
  EXPECT_EQ(q.scale[0], static_cast<float>(2 / 127.5));
  EXPECT_EQ(q.zero_point[0], 0);
  Format narrow = int_format(8, true);
  narrow.narrow_range = true;
  q = compute_qparams(narrow, {-2.f}, {1.f});
  EXPECT_EQ(q.scale[0], static_cast<float>(2.0 / 127));
  EXPECT_EQ(q.zero_point[0], 0);
  Format u8s = int_format(8, true);
  u8s.is_signed = false;
  q = compute_qparams(u8s, {-2.f}, {1.f});
  EXPECT_EQ(q.scale[0], static_cast<float>(2 / 127.5));
  EXPECT_EQ(q.zero_point[0], 128);
  // All-positive range: lo is widened to 0.
  q = compute_qparams(int_format(8, false), {2.f}, {5.f});
  EXPECT_EQ(q.scale[0], static_cast<float>(5.0 / 255));
  EXPECT_EQ(q.zero_point[0], 0);
  // Zero point ties round to even (exact scales: 7.5 / 15 = 0.5): 2.5 -> 2, 3.5 -> 4.
  q = compute_qparams(int_format(4, false), {-1.25f}, {6.25f});
  EXPECT_EQ(q.scale[0], 0.5f);
  EXPECT_EQ(q.zero_point[0], 2);
  q = compute_qparams(int_format(4, false), {-1.75f}, {5.75f});
  EXPECT_EQ(q.zero_point[0], 4);
  // Zero range: scale 1, nothing divides by zero; 0 stays exact.
  q = compute_qparams(int_format(8, true), {0.f}, {0.f});
  EXPECT_EQ(q.scale[0], 1.f);
  EXPECT_EQ(q.zero_point[0], 0);
  q = compute_qparams(u8s, {0.f}, {0.f});
  EXPECT_EQ(q.zero_point[0], 128);
  q = compute_qparams(int_format(8, false), {0.f}, {0.f});
  EXPECT_EQ(q.scale[0], 1.f);
  EXPECT_EQ(q.zero_point[0], 0);
  EXPECT_EQ(fq1(int_format(8, false), q, 0.f), 0.f);
}

TEST(IntFormat, QParamsRejectBadRanges) {
  const Format f = int_format(8, true);
  EXPECT_THROW(compute_qparams(f, {-1.f, -2.f}, {1.f, 2.f}), Error);  // per-tensor needs one
  EXPECT_THROW(compute_qparams(f, {std::nanf("")}, {1.f}), Error);
  EXPECT_THROW(compute_qparams(f, {-1.f}, {std::numeric_limits<float>::infinity()}), Error);
  Format pc = f;
  pc.granularity = Granularity::PerChannel;
  EXPECT_THROW(compute_qparams(pc, {-1.f}, {1.f, 2.f}), Error);
  EXPECT_EQ(compute_qparams(pc, {-1.f, -2.f, 0.f}, {1.f, 2.f, 0.f}).scale.size(), 3u);
  // Formats without calibration take no parameters.
  EXPECT_TRUE(compute_qparams(fixed_fmt(8, 6), {-1.f}, {1.f}).scale.empty());
}

TEST(IntFormat, MatchesQuantizeThenDequantizeOnRandomData) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 3.f);
  std::vector<float> x(5000);
  for (float& v : x) v = nd(rng);
  const Format f = int_format(8, false);
  const QParams q = compute_qparams(f, {-4.f}, {6.f});
  std::vector<int32_t> codes(x.size());
  std::vector<float> y(x.size()), z(x.size());
  const std::vector<int64_t> shape{50, 100};
  quantize_int(f, q, shape, x.data(), codes.data());
  dequantize_int(f, q, shape, codes.data(), y.data());
  fake_quantize(f, q, shape, x.data(), z.data());
  for (size_t i = 0; i < x.size(); ++i) {
    // The ONNX definition written out: float division, nearbyint, float add, clamp.
    const float ref_code =
        std::min(std::max(std::nearbyint(x[i] / q.scale[0]) + q.zero_point[0], 0.f), 255.f);
    ASSERT_EQ(codes[i], static_cast<int32_t>(ref_code));
    ASSERT_TRUE(same_float(y[i], z[i]));
  }
  fake_quantize(f, q, shape, x.data(), x.data());  // in place
  EXPECT_EQ(x, z);
}

TEST(IntFormat, PerChannelUsesEachChannelsParams) {
  const std::vector<int64_t> shape{2, 3, 4};
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i) * 1.7f) * 3.f;
  for (int axis : {0, 1, 2, -1}) {
    Format f = int_format(8, true, Granularity::PerChannel, axis);
    const int a = axis < 0 ? axis + 3 : axis;
    const int64_t ch = shape[a];
    std::vector<float> lo, hi;
    for (int64_t c = 0; c < ch; ++c) {
      lo.push_back(-0.5f * static_cast<float>(c + 1));
      hi.push_back(0.5f * static_cast<float>(c + 1));
    }
    const QParams q = compute_qparams(f, lo, hi);
    ASSERT_EQ(q.scale.size(), static_cast<size_t>(ch));
    std::vector<float> y(24);
    fake_quantize(f, q, shape, x.data(), y.data());
    const Format pt = int_format(8, true);
    for (int64_t i0 = 0; i0 < 2; ++i0)
      for (int64_t i1 = 0; i1 < 3; ++i1)
        for (int64_t i2 = 0; i2 < 4; ++i2) {
          const int64_t idx[3] = {i0, i1, i2};
          const int64_t flat = (i0 * 3 + i1) * 4 + i2;
          const int64_t c = idx[a];
          const QParams qc{{q.scale[c]}, {q.zero_point[c]}};
          ASSERT_TRUE(same_float(y[flat], fq1(pt, qc, x[flat]))) << "axis " << axis << " at " << flat;
        }
    // Channels really differ: channel 0 clips at 0.5 (the widest channel keeps more).
    EXPECT_LE(*std::max_element(y.begin(), y.end()), 0.5f * static_cast<float>(ch) + 1e-6f);
  }
  Format f = int_format(8, true, Granularity::PerChannel, 1);
  std::vector<float> y(24);
  EXPECT_THROW(fake_quantize(f, QParams{{1.f, 1.f}, {0, 0}}, shape, x.data(), y.data()), Error);
  f.axis = 3;
  EXPECT_THROW(fake_quantize(f, QParams{{1.f}, {0}}, shape, x.data(), y.data()), Error);
  EXPECT_THROW(fake_quantize(int_format(8, true), QParams{{0.f}, {0}}, shape, x.data(), y.data()), Error);
  EXPECT_THROW(fake_quantize(int_format(8, true), QParams{{1.f}, {300}}, shape, x.data(), y.data()), Error);
}

// ---- Fixed -----------------------------------------------------------------------------------

TEST(FixedFormat, EveryCodeExactTiesToEvenSaturates) {
  const int cases[][2] = {{8, 6}, {8, 0}, {8, 8}, {4, 2}, {2, 1}, {12, 5}, {16, 10}};
  for (auto& wf : cases) {
    const Format f = fixed_fmt(wf[0], wf[1]);
    const int64_t lo = -(int64_t{1} << (wf[0] - 1)), hi = (int64_t{1} << (wf[0] - 1)) - 1;
    const float unit = std::ldexp(1.f, -wf[1]);
    for (int64_t k = lo; k <= hi; ++k) {
      const float v = static_cast<float>(k) * unit;
      ASSERT_TRUE(same_float(fq1(f, {}, v), v)) << f.name() << " code " << k;
      if (k < hi) {
        const float mid = (static_cast<float>(k) + 0.5f) * unit;
        const int64_t even = (k % 2 == 0) ? k : k + 1;
        ASSERT_EQ(fq1(f, {}, mid), static_cast<float>(even) * unit) << f.name() << " mid " << k;
      }
    }
    EXPECT_EQ(fq1(f, {}, 1e6f), static_cast<float>(hi) * unit);
    EXPECT_EQ(fq1(f, {}, -1e6f), static_cast<float>(lo) * unit);
    EXPECT_EQ(fq1(f, {}, std::numeric_limits<float>::infinity()), static_cast<float>(hi) * unit);
    EXPECT_TRUE(std::isnan(fq1(f, {}, std::nanf(""))));
  }
  EXPECT_EQ(fixed_fmt(8, 6).name(), "fixed8.6");
  EXPECT_EQ(fq1(fixed_fmt(8, 6), {}, 2.f), 127.f / 64);
  EXPECT_EQ(fq1(fixed_fmt(8, 6), {}, -3.f), -2.f);
  EXPECT_FALSE(fixed_fmt(8, 6).needs_calibration());
}

// ---- fp16 / bf16 -----------------------------------------------------------------------------

TEST(HalfFormats, AgreeWithJouleConversions) {
  const Format h = minifloat_preset("fp16"), b = minifloat_preset("bf16");
  EXPECT_EQ(h.kind, FormatKind::Float16);
  EXPECT_EQ(b.kind, FormatKind::BFloat16);
  std::vector<float> xs = {0.f, -0.f, 1.f, -1.f, 65504.f, 65520.f, 70000.f, 5.96046448e-08f, 2.98e-08f,
                           1e-30f, 3.4e38f, 1.00390625f, 1.01171875f, 1.0f + 1.0f / 2048,
                           std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max()};
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    const uint32_t u = bits(rng);
    float f;
    std::memcpy(&f, &u, 4);
    if (!std::isnan(f)) xs.push_back(f);
  }
  std::vector<float> yh(xs.size()), yb(xs.size());
  const std::vector<int64_t> shape{static_cast<int64_t>(xs.size())};
  fake_quantize(h, {}, shape, xs.data(), yh.data());
  fake_quantize(b, {}, shape, xs.data(), yb.data());
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_TRUE(same_float(yh[i], static_cast<float>(Half(xs[i])))) << xs[i];
    ASSERT_TRUE(same_float(yb[i], static_cast<float>(BFloat16(xs[i])))) << xs[i];
  }
  EXPECT_TRUE(std::isinf(fq1(h, {}, 70000.f)));
  EXPECT_EQ(fq1(h, {}, 65504.f), 65504.f);
  EXPECT_EQ(fq1(b, {}, 1.00390625f), 1.f);  // tie -> even
  EXPECT_TRUE(std::isnan(fq1(h, {}, std::nanf(""))));
  EXPECT_TRUE(std::isnan(fq1(b, {}, std::nanf(""))));
  EXPECT_EQ(h.name(), "fp16");
  EXPECT_EQ(b.name(), "bf16");
}

// ---- MiniFloat -------------------------------------------------------------------------------

struct Decoded {
  double value;
  bool nan, inf;
};

// Textbook decoding of a bit pattern S.E..E.M..M, independent of the library.
Decoded decode(uint32_t code, int e, int m, int bias, bool finite_only, bool has_nan) {
  const uint32_t sign = (code >> (e + m)) & 1, exp = (code >> m) & ((1u << e) - 1),
                 man = code & ((1u << m) - 1);
  const uint32_t exp_all = (1u << e) - 1, man_all = (1u << m) - 1;
  const double s = sign ? -1.0 : 1.0;
  if (!finite_only && exp == exp_all) return {0, man != 0, man == 0};
  if (finite_only && has_nan && exp == exp_all && man == man_all) return {0, true, false};
  if (exp == 0) return {s * man * std::pow(2.0, 1 - bias - m), false, false};
  return {s * (1 + man / std::pow(2.0, m)) * std::pow(2.0, static_cast<int>(exp) - bias), false, false};
}

struct MiniCase {
  Format f;
  double max;
};

std::vector<MiniCase> mini_cases() {
  return {
      {minifloat_preset("fp8_e4m3"), 448},  {minifloat_preset("fp8_e5m2"), 57344},
      {mini(3, 2, false), 14},              {minifloat_preset("fp6_e3m2"), 28},
      {mini(3, 2, true), 24},               {minifloat_preset("fp6_e2m3"), 7.5},
      {minifloat_preset("fp4_e2m1"), 6},    {mini(4, 3, false), 240},
      {mini(5, 0, true), 32768},            {mini(2, 2, false, true, 3), 0.875},
  };
}

TEST(MiniFloatFormat, EveryCodeIsAFixedPointAndMaxMatches) {
  for (const MiniCase& mc : mini_cases()) {
    const Format& f = mc.f;
    ASSERT_NO_THROW(f.validate("test")) << f.describe();
    EXPECT_EQ(f.max_value(), mc.max) << f.describe();
    const int bias = f.effective_bias();
    const uint32_t ncodes = 1u << (1 + f.exp_bits + f.man_bits);
    double largest = 0;
    int nans = 0;
    for (uint32_t c = 0; c < ncodes; ++c) {
      const Decoded d = decode(c, f.exp_bits, f.man_bits, bias, f.finite_only, f.has_nan);
      if (d.nan) {
        ++nans;
        continue;
      }
      if (d.inf) continue;
      const float v = static_cast<float>(d.value);
      ASSERT_EQ(static_cast<double>(v), d.value);
      const float neg = (c >> (f.exp_bits + f.man_bits)) ? -0.f : 0.f;
      const float want = d.value == 0 ? neg : v;  // S.0000.000 with S set is -0
      ASSERT_TRUE(same_float(minifloat_round(f, want), want)) << f.name() << " code " << c;
      largest = std::max(largest, d.value);
    }
    EXPECT_EQ(largest, mc.max) << f.describe();
    if (!f.has_nan) {
      EXPECT_EQ(nans, 0);
    }
  }
  EXPECT_EQ(minifloat_preset("fp8_e4m3").max_value(), 448);
  EXPECT_EQ(minifloat_preset("fp8_e5m2").max_value(), 57344);
}

TEST(MiniFloatFormat, MidpointsRoundToEvenNeighbour) {
  for (const MiniCase& mc : mini_cases()) {
    const Format& f = mc.f;
    const int bias = f.effective_bias();
    // Positive codes in order: consecutive codes are consecutive values.
    const uint32_t npos = 1u << (f.exp_bits + f.man_bits);
    std::vector<std::pair<uint32_t, double>> vals;
    for (uint32_t c = 0; c < npos; ++c) {
      const Decoded d = decode(c, f.exp_bits, f.man_bits, bias, f.finite_only, f.has_nan);
      if (!d.nan && !d.inf) vals.push_back({c, d.value});
    }
    for (size_t i = 0; i + 1 < vals.size(); ++i) {
      const auto [ca, a] = vals[i];
      const auto [cb, b] = vals[i + 1];
      const float mid = static_cast<float>((a + b) / 2);
      ASSERT_EQ(static_cast<double>(mid), (a + b) / 2);
      const double even = (ca % 2 == 0) ? a : b;
      ASSERT_EQ(minifloat_round(f, mid), static_cast<float>(even))
          << f.name() << " between " << a << ", " << b;
      ASSERT_EQ(minifloat_round(f, -mid), -static_cast<float>(even));
      ASSERT_EQ(minifloat_round(f, std::nextafter(mid, 0.f)), static_cast<float>(a));
      ASSERT_EQ(minifloat_round(f, std::nextafter(mid, 1e30f)), static_cast<float>(b));
    }
  }
}

TEST(MiniFloatFormat, SaturateVersusOverflow) {
  const float inf = std::numeric_limits<float>::infinity();
  Format e4 = minifloat_preset("fp8_e4m3");
  EXPECT_EQ(minifloat_round(e4, 1000.f), 448.f);
  EXPECT_EQ(minifloat_round(e4, -inf), -448.f);
  EXPECT_EQ(minifloat_round(e4, 464.f), 448.f);  // tie between 448 (even) and 480 (NaN code)
  EXPECT_EQ(minifloat_round(e4, 470.f), 448.f);
  e4.saturate = false;
  EXPECT_EQ(minifloat_round(e4, 464.f), 448.f);
  EXPECT_TRUE(std::isnan(minifloat_round(e4, 470.f)));
  EXPECT_TRUE(std::isnan(minifloat_round(e4, inf)));
  EXPECT_TRUE(std::isnan(minifloat_round(e4, 1000.f)));
  Format e5 = minifloat_preset("fp8_e5m2");
  EXPECT_EQ(minifloat_round(e5, 1e9f), 57344.f);
  EXPECT_EQ(minifloat_round(e5, inf), 57344.f);
  EXPECT_EQ(minifloat_round(e5, 61440.f), 57344.f);
  e5.saturate = false;
  EXPECT_EQ(minifloat_round(e5, 61439.f), 57344.f);
  EXPECT_EQ(minifloat_round(e5, 61440.f), inf);  // IEEE: the tie rounds up into overflow
  EXPECT_EQ(minifloat_round(e5, -1e9f), -inf);
  EXPECT_EQ(minifloat_round(e5, -inf), -inf);
  for (const MiniCase& mc : mini_cases()) EXPECT_TRUE(std::isnan(minifloat_round(mc.f, std::nanf(""))));
}

TEST(MiniFloatFormat, DenormalsOnOff) {
  Format f = minifloat_preset("fp8_e4m3");  // min subnormal 2^-9, min normal 2^-6
  const float sub = std::ldexp(1.f, -9), mn = std::ldexp(1.f, -6);
  EXPECT_EQ(minifloat_round(f, sub), sub);
  EXPECT_EQ(minifloat_round(f, 3 * sub), 3 * sub);
  EXPECT_EQ(minifloat_round(f, 0.5f * sub), 0.f);  // tie -> even (0)
  EXPECT_EQ(minifloat_round(f, 0.51f * sub), sub);
  EXPECT_TRUE(same_float(minifloat_round(f, -0.2f * sub), -0.f));
  f.denormals = false;
  EXPECT_EQ(minifloat_round(f, sub), 0.f);
  EXPECT_EQ(minifloat_round(f, 0.4f * mn), 0.f);
  EXPECT_EQ(minifloat_round(f, 0.5f * mn), 0.f);  // tie -> 0
  EXPECT_EQ(minifloat_round(f, 0.6f * mn), mn);
  EXPECT_EQ(minifloat_round(f, -0.9f * mn), -mn);
  EXPECT_EQ(minifloat_round(f, mn * 1.125f), mn * 1.125f);  // normals unaffected
  // A format whose only finite values are subnormals needs denormals.
  Format tiny = mini(1, 2, false);
  EXPECT_NO_THROW(tiny.validate("t"));
  tiny.denormals = false;
  EXPECT_THROW(tiny.validate("t"), Error);
}

TEST(MiniFloatFormat, ScaledMapsRangeOntoMax) {
  Format f = minifloat_preset("fp8_e4m3");
  f.scaled = true;
  EXPECT_TRUE(f.needs_calibration());
  QParams q = compute_qparams(f, {-896.f}, {100.f});
  EXPECT_EQ(q.scale[0], 2.f);
  EXPECT_EQ(q.zero_point[0], 0);
  EXPECT_EQ(fq1(f, q, 896.f), 896.f);
  EXPECT_EQ(fq1(f, q, -2000.f), -896.f);
  EXPECT_EQ(fq1(f, q, 2.f * 0.5f * std::ldexp(1.f, -9)), 0.f);
  // Per-channel: each channel's absmax maps onto 448.
  f.granularity = Granularity::PerChannel;
  f.axis = 0;
  q = compute_qparams(f, {-1.f, -4.f}, {448.f, 1.f});
  ASSERT_EQ(q.scale.size(), 2u);
  EXPECT_EQ(q.scale[0], 1.f);
  EXPECT_EQ(q.scale[1], 4.f / 448);
  std::vector<float> x{448.f, 300.f, 4.f, 3.f}, y(4);
  fake_quantize(f, q, {2, 2}, x.data(), y.data());
  EXPECT_EQ(y[0], 448.f);
  EXPECT_EQ(y[1], 288.f);  // 300 -> 288 (spacing 32 above 256)
  EXPECT_EQ(y[2], 4.f);
  EXPECT_EQ(y[3], minifloat_round(minifloat_preset("fp8_e4m3"), 3.f / q.scale[1]) * q.scale[1]);
  // Unscaled minifloat with per-channel granularity is a configuration error.
  Format bad = minifloat_preset("fp8_e4m3");
  bad.granularity = Granularity::PerChannel;
  EXPECT_THROW(bad.validate("w"), Error);
}

TEST(MiniFloatFormat, NamesAndPresets) {
  EXPECT_EQ(minifloat_preset("fp8_e4m3").name(), "fp8_e4m3");
  EXPECT_EQ(minifloat_preset("fp8_e5m2").name(), "fp8_e5m2");
  EXPECT_EQ(mini(3, 2, false).name(), "e3m2");
  EXPECT_EQ(mini(4, 3, false).name(), "e4m3");  // IEEE-like E4M3 is not the FN preset
  EXPECT_EQ(mini(4, 3, true, true, 8).name(), "e4m3fn_b8");
  EXPECT_EQ(mini(3, 2, true).name(), "e3m2fn");
  EXPECT_EQ(minifloat_preset("fp6_e3m2").name(), "fp6_e3m2");
  EXPECT_THROW(minifloat_preset("fp8_e4m4"), Error);
  EXPECT_NE(minifloat_preset("fp8_e4m3").describe().find("max 448"), std::string::npos);
  EXPECT_EQ(Format{}.name(), "fp32");
  EXPECT_EQ(block_fmt(8, 32).name(), "bfp8b32");
  EXPECT_EQ(int_format(4, true).name(), "int4");
  EXPECT_EQ(int_format(8, true, Granularity::PerChannel, 0).describe(), "int8 symmetric per-channel(axis 0)");
  EXPECT_EQ(int_format(8, false).describe(), "uint8 asymmetric per-tensor");
}

// ---- BlockFloat ------------------------------------------------------------------------------

TEST(BlockFloatFormat, HandExample) {
  const Format f = block_fmt(4, 4);  // mantissas -8..7, step 2^(e-2)
  std::vector<float> x{1.0f, 0.3f, -0.6f, 0.1f, 1.9f, 0.375f, 0.625f, -2.0f};
  std::vector<float> y(8);
  fake_quantize(f, {}, {8}, x.data(), y.data());
  // Block 1: max 1 -> e 0, step 0.25: 1, 0.25 (1.2), -0.5 (-2.4), 0 (0.4).
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 0.25f);
  EXPECT_EQ(y[2], -0.5f);
  EXPECT_EQ(y[3], 0.0f);
  // Block 2: max 2 -> e 1, step 0.5: 1.9 -> 3.8 -> 4 -> 2.0; 0.375 -> 0.75 -> 1 -> 0.5;
  // 0.625 -> 1.25 -> 1 -> 0.5; -2 -> -4 steps, exact.
  EXPECT_EQ(y[4], 2.0f);
  EXPECT_EQ(y[5], 0.5f);
  EXPECT_EQ(y[6], 0.5f);
  EXPECT_EQ(y[7], -2.0f);
  // Ties go to even mantissas; the top clamps to 7 steps.
  std::vector<float> t{1.5f, 0.375f, 0.625f, -1.999f}, u(4);
  fake_quantize(f, {}, {4}, t.data(), u.data());
  EXPECT_EQ(u[0], 1.5f);
  EXPECT_EQ(u[1], 0.5f);   // 1.5 steps -> 2
  EXPECT_EQ(u[2], 0.5f);   // 2.5 steps -> 2
  EXPECT_EQ(u[3], -2.0f);  // -7.996 -> -8 (two's complement allows -8)
  std::vector<float> c{1.99f, 0.f, 0.f, 0.f};
  fake_quantize(f, {}, {4}, c.data(), c.data());
  EXPECT_EQ(c[0], 1.75f);  // 7.96 steps clamps to 7
}

TEST(BlockFloatFormat, PowerOfTwoMaxIsExactAndZeroBlocksStayZero) {
  for (int bits : {2, 3, 4, 8, 16}) {
    for (int e = -130; e <= 120; e += 7) {
      const Format f = block_fmt(bits, 8);
      std::vector<float> x(8, 0.f);
      x[3] = std::ldexp(1.f, e);
      x[5] = -std::ldexp(1.f, e);
      x[6] = std::ldexp(1.f, e) * 0.01f;
      std::vector<float> y(8);
      fake_quantize(f, {}, {8}, x.data(), y.data());
      ASSERT_EQ(y[3], x[3]) << "bits " << bits << " e " << e;
      ASSERT_EQ(y[5], x[5]);
      ASSERT_EQ(y[0], 0.f);
    }
  }
  std::vector<float> z(16, 0.f), w(16, 1.f);
  fake_quantize(block_fmt(8, 16), {}, {16}, z.data(), w.data());
  EXPECT_EQ(w, z);
}

TEST(BlockFloatFormat, PartialLastBlockPerRow) {
  // Rows of 5 with blocks of 4: blocks [0,4) and [4,5) in every row, never across rows.
  const Format f = block_fmt(4, 4);
  std::vector<float> x{100.f, 1.f, 2.f, 3.f, 0.3f, 0.3f, 0.f, 0.f, 0.f, 1000.f};
  std::vector<float> y(10);
  fake_quantize(f, {}, {2, 5}, x.data(), y.data());
  EXPECT_EQ(y[1], 0.f);      // step 16 in the block of 100
  EXPECT_EQ(y[4], 0.3125f);  // alone: e -2, step 1/16, 4.8 steps -> 5
  EXPECT_EQ(y[5], 0.3125f);  // next row starts a fresh block
  EXPECT_EQ(y[9], 896.f);    // 1000: e 9, step 128, 7.8 steps -> 8, clamped to 7
}

TEST(BlockFloatFormat, NonFinitePassThrough) {
  const Format f = block_fmt(8, 4);
  std::vector<float> x{std::nanf(""), std::numeric_limits<float>::infinity(), 0.5f, 0.25f}, y(4);
  fake_quantize(f, {}, {4}, x.data(), y.data());
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_TRUE(std::isinf(y[1]));
  EXPECT_EQ(y[2], 0.5f);
  EXPECT_EQ(y[3], 0.25f);
}

// ---- validate ----------------------------------------------------------------------------------

TEST(FormatValidate, RejectsBadFields) {
  auto bad = [](const Format& f) {
    try {
      f.validate("layer conv1");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::BadInput);
      EXPECT_EQ(std::string(e.what()).rfind("layer conv1: ", 0), 0u) << e.what();
      return true;
    }
    return false;
  };
  EXPECT_TRUE(bad(int_format(1, true)));
  EXPECT_TRUE(bad(int_format(17, true)));
  EXPECT_FALSE(bad(int_format(2, true)));
  EXPECT_FALSE(bad(int_format(16, false)));
  EXPECT_TRUE(bad(fixed_fmt(8, 9)));
  EXPECT_TRUE(bad(fixed_fmt(8, -1)));
  EXPECT_TRUE(bad(fixed_fmt(33, 0)));
  EXPECT_TRUE(bad(fixed_fmt(1, 0)));
  EXPECT_FALSE(bad(fixed_fmt(32, 32)));
  EXPECT_TRUE(bad(mini(0, 3, false)));
  EXPECT_TRUE(bad(mini(9, 3, false)));
  EXPECT_TRUE(bad(mini(4, 24, false)));
  EXPECT_TRUE(bad(mini(4, 3, false, true, 300)));  // below float32 range
  EXPECT_TRUE(bad(mini(8, 3, false, true, 0)));    // above float32 range
  EXPECT_TRUE(bad(mini(4, 3, false, true, -2)));
  EXPECT_TRUE(bad(mini(4, 3, false, false)));      // has_nan=false needs finite_only
  EXPECT_TRUE(bad(mini(1, 0, true)));              // only zero and NaN
  EXPECT_FALSE(bad(mini(8, 23, false)));           // float32 itself
  Format nosat = minifloat_preset("fp4_e2m1");
  nosat.saturate = false;
  EXPECT_TRUE(bad(nosat));
  EXPECT_TRUE(bad(block_fmt(1, 32)));
  EXPECT_TRUE(bad(block_fmt(17, 32)));
  EXPECT_TRUE(bad(block_fmt(8, 0)));
  Format pc = minifloat_preset("fp16");
  pc.granularity = Granularity::PerChannel;
  EXPECT_TRUE(bad(pc));
  // fake_quantize validates too.
  float v = 1.f;
  EXPECT_THROW(fake_quantize(int_format(1, true), {{1.f}, {0}}, {1}, &v, &v), Error);
  EXPECT_THROW(fake_quantize(Format{}, {}, {-1}, &v, &v), Error);
  int32_t code;
  EXPECT_THROW(quantize_int(fixed_fmt(8, 4), {}, {1}, &v, &code), Error);
}

}  // namespace
