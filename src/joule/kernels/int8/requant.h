#pragma once
// The integer plan's epilogue (ops::qint::Requant: bias in accumulator units, per-channel scale,
// activation, output zero point, round half to even, saturation) over float accumulators,
// vectorised: every joule int8 kernel and the emulated ones (what --int8 simulated runs) call
// these, so their codes agree bit for bit with each other and with the reference kernel
// (nothing is contracted into fused multiply-adds; SiLU is ops::qint::silu's exact sequence).
#include <cstdint>

#include "joule/ops/int_util.h"

namespace joule::kernels {

// y[i * ldy + j] = Requant(acc[i * ldacc + j]) of channel c0 + j, for i < rows, j < nc.
// `bias`: per channel, all of them (zeros where the node has none).
template <class Y>
void requant_rows(const ops::qint::Requant& r, const float* bias, const float* acc, int64_t ldacc, Y* y, int64_t ldy,
                  int64_t rows, int64_t c0, int64_t nc);
// y[j] = Requant(acc[j]) of channel c, for j < n (a channel-first plane).
template <class Y>
void requant_plane(const ops::qint::Requant& r, const float* bias, const float* acc, Y* y, int64_t n, int64_t c);

}  // namespace joule::kernels
