#pragma once
// The FMA loop of cpu_peak's AVX-512 measurement, in its own file compiled with AVX-512 flags.
#include <cstdint>

namespace joule::profile {

inline constexpr int kPeakChains = 12;  // independent accumulators: enough to hide FMA latency

// `iters` x kPeakChains x 16-lane FMAs (kPeakChains * 16 * 2 FLOP per iteration); returns the
// sum of the accumulators so the loop cannot be optimised away. Only when
// cpu_features().avx512.
float fma_chains_avx512(int64_t iters);

}  // namespace joule::profile
