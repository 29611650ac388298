#pragma once
// Random draws of the random ops (RandomUniform, RandomNormal, their *Like forms, Bernoulli,
// training-mode Dropout, joule.DropoutTrain). The generator is SplitMix64 (Steele, Lea and
// Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014): its i-th output for a
// seed is a hash of seed + (i + 1) * golden-ratio increment, so element i of a tensor is computed
// on its own and any split of the elements over threads gives the same values.
#include <cmath>
#include <cstdint>
#include <numbers>

#include "joule/ir/graph.h"

namespace joule::ops {

// Ops whose outputs are random draws (RandomUniform, RandomNormal, their *Like forms, Bernoulli,
// Multinomial; Dropout, random in training mode): never evaluated ahead of time.
bool is_random_op(const ir::Node& node);

}  // namespace joule::ops

namespace joule::ops::rng {

inline constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;

// SplitMix64's output function of state x + gamma.
inline uint64_t splitmix64(uint64_t x) {
  x += kGamma;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The seed of a random node: its `seed` attribute (a float for the Random* ops and Bernoulli, an
// int for Dropout; hashed from its value) when present. Otherwise a deterministic default, seed 0
// mixed with a hash of the node's name and first output name, so that repeated runs of a model
// give the same values and two unseeded nodes of one graph different ones.
uint64_t node_seed(const ir::Node& node);

// Draw i in [0, 1) (53 bits) of the stream `seed`.
inline double uniform01(uint64_t seed, uint64_t i) {
  return static_cast<double>(splitmix64(seed + i * kGamma) >> 11) * 0x1p-53;
}

// Draw i of a standard normal stream (Box-Muller on the uniform draws 2i and 2i + 1).
inline double standard_normal(uint64_t seed, uint64_t i) {
  const double u1 = 1.0 - uniform01(seed, 2 * i), u2 = uniform01(seed, 2 * i + 1);  // u1 in (0, 1]
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace joule::ops::rng
