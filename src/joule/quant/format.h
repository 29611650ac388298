#pragma once
// Number formats for quantization: what a float32 tensor becomes when it is stored in fewer
// bits (integers with an affine scale, fixed point, fp16/bf16, small floats such as FP8, and
// block floating point). Everything here is "fake quantization": values are rounded onto the
// format's grid and returned as float32, so the engine can measure the accuracy cost without
// integer kernels. quantize_int/dequantize_int expose the integer codes for export.
#include <cstdint>
#include <string>
#include <vector>

namespace joule::quant {

enum class FormatKind { None, Int, Fixed, Float16, BFloat16, MiniFloat, BlockFloat };
enum class Granularity { PerTensor, PerChannel };

struct Format {
  FormatKind kind = FormatKind::None;  // None = stays float32 (no quantization)
  // Int: bits 2..16. Fixed: total width 2..32. MiniFloat: exp_bits 1..8, man_bits 0..23.
  // BlockFloat: bits = mantissa width incl. sign (2..16), block = elements sharing one exponent.
  int bits = 8;
  bool symmetric = true;     // Int
  bool is_signed = true;     // Int: default signed when symmetric, unsigned when asymmetric
  bool narrow_range = false; // Int: drop the most negative code ([-(2^(b-1)-1), 2^(b-1)-1]);
                             // unsigned: [1, 2^b-1] as TensorFlow does
  Granularity granularity = Granularity::PerTensor;  // Int / MiniFloat with scaling
  int axis = 0;              // channel axis for PerChannel (negative counts from the end)
  int frac_bits = 0;         // Fixed: fractional width, 0..bits
  int exp_bits = 4, man_bits = 3;  // MiniFloat
  int bias = -1;             // MiniFloat exponent bias; -1 = 2^(exp_bits-1)-1
  bool finite_only = false;  // MiniFloat "FN" style (E4M3FN): no inf; only S.1111.111 is NaN
  bool has_nan = true;       // MiniFloat finite_only: false = no NaN code either, every bit
                             // pattern is a number (OCP MX FP6 E3M2/E2M3, FP4 E2M1)
  bool denormals = true;     // MiniFloat: subnormals kept (false: below the smallest normal
                             // rounds to 0 or the smallest normal, nearest, ties to 0)
  bool saturate = true;      // MiniFloat: overflow and +-inf -> +-max (false: -> inf, or NaN
                             // if finite_only)
  bool scaled = false;       // MiniFloat: a calibrated per-tensor/channel scale maps the
                             // range onto +-max
  int block = 32;            // BlockFloat

  bool needs_calibration() const;  // Int, and MiniFloat when scaled
  int64_t qmin() const;            // Int only: code range from bits/is_signed/narrow_range
  int64_t qmax() const;
  double max_value() const;        // MiniFloat: largest finite magnitude (E4M3FN 448, E5M2 57344)
  double min_normal() const;       // MiniFloat: smallest positive normal
  int effective_bias() const;      // MiniFloat: bias with -1 resolved
  // Short: "int8", "uint8", "int4", "fixed8.6", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2",
  // "e3m2", "bfp8b32", "fp32".
  std::string name() const;
  // Long: "int8 symmetric per-channel(axis 0)", ...
  std::string describe() const;
  // Throws joule::fail(where + ": ...") naming the bad field.
  void validate(const std::string& where) const;
};

// Int format with the conventional signedness (signed when symmetric, unsigned otherwise).
Format int_format(int bits, bool symmetric, Granularity g = Granularity::PerTensor, int axis = 0);

// Presets by name: "fp8_e4m3" (E4M3FN: bias 7, finite_only, max 448), "fp8_e5m2" (IEEE-like,
// bias 15, inf/NaN at exponent 31, max 57344), "fp16", "bf16", and the OCP MX element types
// without inf/NaN "fp6_e3m2" (max 28), "fp6_e2m3" (max 7.5), "fp4_e2m1" (max 6).
// Throws fail() for an unknown name.
Format minifloat_preset(const std::string& name);

// Affine parameters. Per-tensor: one entry each. Per-channel: one per channel along axis.
struct QParams {
  std::vector<float> scale;
  std::vector<int32_t> zero_point;
};

// Ranges per channel (or one) -> qparams, following onnxruntime's compute_scale_zp:
//   symmetric:  absmax = max(|lo|,|hi|); scale = absmax / ((qmax-qmin)/2); zp = round((qmin+qmax)/2)
//               (int8: absmax/127.5, zp 0; narrow int8: absmax/127; uint8: absmax/127.5, zp 128)
//   asymmetric: lo = min(lo,0), hi = max(hi,0); scale = (hi-lo)/(qmax-qmin);
//               zp = round_half_even(qmin - lo/scale) clamped to [qmin, qmax]
//   Scale and zp are computed in double, the scale is then stored as float.
//   A zero range (scale below FLT_MIN) gives scale 1, so nothing divides by zero; the zero
//   point is then what the formula gives with scale 1 (symmetric: the midpoint; asymmetric: qmin),
//   so 0 stays exact and per-channel symmetric zero points stay uniform.
// MiniFloat scaled: scale = absmax / max_value() (zero range: 1), zp 0. Others: empty QParams.
// lo/hi must be finite and the same length (1 for PerTensor).
QParams compute_qparams(const Format& f, const std::vector<float>& lo, const std::vector<float>& hi);

// Fake quantization (quantize then dequantize) of a row-major float32 tensor of `shape`
// (PerChannel uses f.axis; BlockFloat blocks run along the LAST axis, a partial last block allowed).
// Int: q = clamp(round_half_even(x/scale) + zp, qmin, qmax); y = (q - zp) * scale, in float,
//   bit-exact to ONNX QuantizeLinear + DequantizeLinear as onnxruntime computes them.
//   NaN stays NaN (quantize_int maps it to zp); +-inf saturates.
// Fixed: y = clamp(round_half_even(x * 2^frac), -(2^(w-1)), 2^(w-1)-1) / 2^frac (NaN stays NaN).
// fp16/bf16: round-to-nearest-even cast and back (IEEE: overflow -> inf).
// MiniFloat: round to nearest representable (ties to even mantissa), NaN stays NaN, overflow
//   per saturate; scaled: y = round(x/scale) * scale in float, as ONNX float8 Q/DQ.
// BlockFloat: shared exponent e = floor(log2(max|x| in block)); mantissas are two's complement
//   (bits)-bit ints with step 2^(e - (bits-2)), round half even, clamped; an all-zero block
//   stays zero. Non-finite elements pass through and do not set the exponent.
// x == y is allowed (in place).
void fake_quantize(const Format& f, const QParams& q, const std::vector<int64_t>& shape,
                   const float* x, float* y);

// Int only: the integer codes (for export and integer execution), row-major like fake_quantize.
void quantize_int(const Format& f, const QParams& q, const std::vector<int64_t>& shape,
                  const float* x, int32_t* codes);
// Int only: y = (code - zp) * scale in float, as ONNX DequantizeLinear.
void dequantize_int(const Format& f, const QParams& q, const std::vector<int64_t>& shape,
                    const int32_t* codes, float* y);

// MiniFloat, unscaled: x rounded to the nearest value of the format (validated format).
float minifloat_round(const Format& f, float x);

}  // namespace joule::quant
