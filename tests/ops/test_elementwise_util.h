#pragma once
// Helpers for the elementwise op tests (test_elementwise_*.cpp).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "joule/core/error.h"
// op_test_util.h trips -Wdangling-else (EXPECT_EQ under an unbraced if) with this g++.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-else"
#include "ops/op_test_util.h"
#pragma GCC diagnostic pop

namespace joule::elemtest {
using namespace joule::testing;

template <class T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

inline Tensor f32(std::vector<float> v, Shape s) { return Tensor::from_vector(v, std::move(s)); }

template <class T>
Tensor vec(std::vector<T> v, Shape s) {
  return Tensor::from_vector(v, std::move(s));
}

}  // namespace joule::elemtest
