#pragma once
// Helpers for the nn op tests (Conv, pools, MatMul, normalisations, reductions, ...).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ops/op_test_util.h"

namespace joule::testing::nn {

using Attrs = std::map<std::string, ir::Attribute>;
using Ints = std::vector<int64_t>;

inline Tensor F(std::vector<float> v, Shape s) { return Tensor::from_vector(v, std::move(s)); }
inline Tensor I64(std::vector<int64_t> v, Shape s) { return Tensor::from_vector(v, std::move(s)); }

inline std::vector<float> values(const Tensor& t) {
  const Tensor f = t.dtype() == DType::Float32 ? t : t.cast(DType::Float32);
  return std::vector<float>(f.data<float>(), f.data<float>() + f.numel());
}

// Expects same shape and elementwise |got - want| <= atol + rtol * |want|.
inline void expect_close(const Tensor& got, const Tensor& want, double atol = 1e-5,
                         double rtol = 1e-5, const std::string& what = "") {
  ASSERT_EQ(shape_str(got.shape()), shape_str(want.shape())) << what;
  int bad = 0;
  for (int64_t i = 0; i < got.numel() && bad < 10; ++i) {
    const double g = got.value_as_double(i), w = want.value_as_double(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::abs(g - w) <= atol + rtol * std::abs(w))) {
      ADD_FAILURE() << what << " element " << i << ": got " << g << " want " << w;
      ++bad;
    }
  }
}

inline void expect_values(const Tensor& got, const std::vector<float>& want, Shape shape,
                          double atol = 1e-5) {
  expect_close(got, F(want, std::move(shape)), atol, 1e-5);
}

// Runs a single-output op.
inline Tensor run1(const std::string& op, const std::vector<Tensor>& in, Attrs attrs = {},
                   int64_t opset = 17, bool constant_inputs = false) {
  auto node = make_node(op, in.size(), 1, std::move(attrs));
  return run_op(node, in, opset, constant_inputs).at(0);
}

}  // namespace joule::testing::nn
