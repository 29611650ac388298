#pragma once
// Seeded random tensors for tests (one definition for every test directory).
#include <random>

#include "joule/core/tensor.h"

namespace joule::testing {

// float32, uniform in [lo, hi), the same values for the same seed.
inline Tensor random_tensor(Shape shape, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  Tensor t(DType::Float32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

}  // namespace joule::testing
