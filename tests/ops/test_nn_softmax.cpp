// Softmax, LogSoftmax, Hardmax: opset-13 single-axis semantics vs the older coerce-to-2-D.
#include <cmath>

#include "ops/test_nn_util.h"

namespace joule::testing::nn {
namespace {

std::vector<float> softmax_ref(const std::vector<float>& v) {
  double m = v[0], s = 0;
  for (float x : v) m = std::max(m, static_cast<double>(x));
  for (float x : v) s += std::exp(x - m);
  std::vector<float> r;
  for (float x : v) r.push_back(static_cast<float>(std::exp(x - m) / s));
  return r;
}

TEST(NnSoftmax, LastAxisDefault) {
  Tensor x = F({1, 2, 3, -1, 0, 1}, {2, 3});
  std::vector<float> want = softmax_ref({1, 2, 3});
  const std::vector<float> r2 = softmax_ref({-1, 0, 1});
  want.insert(want.end(), r2.begin(), r2.end());
  expect_values(run1("Softmax", {x}), want, {2, 3});
  // axis 0 at opset 13: columns
  const std::vector<float> c = softmax_ref({1, -1});
  expect_values(run1("Softmax", {x}, {{"axis", int64_t{0}}}), {c[0], c[0], c[0], c[1], c[1], c[1]},
                {2, 3});
}

TEST(NnSoftmax, Opset11CoercesTo2D) {
  Tensor x = F({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  // opset 11, default axis 1: each batch row of 4 elements together
  std::vector<float> want = softmax_ref({1, 2, 3, 4});
  const std::vector<float> r2 = softmax_ref({5, 6, 7, 8});
  want.insert(want.end(), r2.begin(), r2.end());
  expect_values(run1("Softmax", {x}, {}, 11), want, {2, 2, 2});
  // opset 13, axis 1: pairs along dim 1 only
  const std::vector<float> p = softmax_ref({1, 3});
  expect_values(run1("Softmax", {x}, {{"axis", int64_t{1}}}, 13),
                {p[0], p[0], p[1], p[1], p[0], p[0], p[1], p[1]}, {2, 2, 2});
  // opset 11, axis = rank: every element alone
  expect_values(run1("Softmax", {x}, {{"axis", int64_t{3}}}, 11), {1, 1, 1, 1, 1, 1, 1, 1},
                {2, 2, 2});
}

TEST(NnSoftmax, LargeNumbersStable) {
  Tensor y = run1("Softmax", {F({1000, 1001, 1002}, {1, 3})});
  expect_values(y, softmax_ref({0, 1, 2}), {1, 3});
  Tensor l = run1("LogSoftmax", {F({1000, 1001, 1002}, {1, 3})});
  const std::vector<float> s = softmax_ref({0, 1, 2});
  expect_values(l, {std::log(s[0]), std::log(s[1]), std::log(s[2])}, {1, 3});
}

TEST(NnLogSoftmax, MiddleAxisAndOpset11) {
  Tensor x = F({0, 1, 2, 3}, {1, 2, 2});
  const std::vector<float> p = softmax_ref({0, 2});
  expect_values(run1("LogSoftmax", {x}, {{"axis", int64_t{1}}}),
                {std::log(p[0]), std::log(p[0]), std::log(p[1]), std::log(p[1])}, {1, 2, 2});
  const std::vector<float> q = softmax_ref({0, 1, 2, 3});
  expect_values(run1("LogSoftmax", {x}, {}, 12),
                {std::log(q[0]), std::log(q[1]), std::log(q[2]), std::log(q[3])}, {1, 2, 2});
}

TEST(NnHardmax, TiesAndOpsets) {
  expect_values(run1("Hardmax", {F({1, 3, 3, 2, 0, 2}, {2, 3})}), {0, 1, 0, 1, 0, 0}, {2, 3});
  Tensor x = F({1, 2, 3, 0}, {1, 2, 2});
  expect_values(run1("Hardmax", {x}, {}, 11), {0, 0, 1, 0}, {1, 2, 2});
  expect_values(run1("Hardmax", {x}, {{"axis", int64_t{1}}}), {0, 1, 1, 0}, {1, 2, 2});
}

TEST(NnSoftmax, DtypesEmptyAndErrors) {
  Tensor d = run1("Softmax", {Tensor::from_vector<double>({0, 0}, {2})});
  ASSERT_EQ(d.dtype(), DType::Float64);
  EXPECT_DOUBLE_EQ(d.data<double>()[0], 0.5);
  Tensor h = run1("Softmax", {F({0, 0}, {2}).cast(DType::Float16)});
  EXPECT_EQ(h.dtype(), DType::Float16);
  expect_values(h, {0.5f, 0.5f}, {2});
  Tensor e = run1("Softmax", {Tensor(DType::Float32, {0, 3})});
  EXPECT_EQ(shape_str(e.shape()), "[0,3]");
  EXPECT_THROW(run1("Softmax", {F({1, 2}, {2})}, {{"axis", int64_t{1}}}), Error);
  EXPECT_THROW(run1("Softmax", {F({1, 2}, {2}).cast(DType::Int32)}), Error);
}

}  // namespace
}  // namespace joule::testing::nn
