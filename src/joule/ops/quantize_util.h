#pragma once
// The arithmetic of QuantizeLinear / DequantizeLinear over one contiguous span, shared by the
// ops' reference kernels (ops/quantize_linear.cpp) and the fast "quantize" kernels
// (kernels/eltwise/quantize.cpp), so both give the same codes bit for bit. Vectorised (AVX-512
// when core/cpu_features reports it).
#include <cstdint>

namespace joule::ops::quant {

// y[i] = saturate(round_half_even(clamp(x[i], lo, hi) / s) + z) in Q's range. The clamp is
// joule's QuantizeLinear (a Relu or Clip folded in: quantization is monotone, so clamping before
// equals the separate op exactly); lo = -inf, hi = +inf for ONNX's. NaN gives the lowest code.
// Q: int8, uint8, int16, uint16.
template <class Q>
void quantize_values(const float* x, Q* y, int64_t n, float s, float z, float lo, float hi);

// The same codes for x op B, op '*' or '+' (one float32 operation, then quantized as above), in
// one AVX-512 pass: rows [r0, r0 + rows) of R elements, row i against B's row (i / per) (R
// values), x and y from row r0 on (the gate of an N,H,W,C squeeze-and-excitation block times its
// input, quantized). False, and nothing written, without AVX-512 or where the scale's reciprocal
// is not a normal float: the caller computes x op B and calls quantize_values.
template <class Q>
bool quantize_gated_rows(const float* x, const float* b, char op, int64_t r0, int64_t rows, int64_t R, int64_t per, Q* y,
                         float s, float z, float lo, float hi);

// y[i] = (x[i] - z) * s for 8/16-bit codes (exact in float before the product).
template <class Q>
void dequantize_values(const Q* x, float* y, int64_t n, float s, float z);

}  // namespace joule::ops::quant
