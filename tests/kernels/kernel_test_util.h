#pragma once
// Helpers for checking fast algorithms against the reference kernels through a Session.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "joule/runtime/session.h"
#include "test_tensors.h"

namespace joule::testing {


// max |a - b| / max(max |b|, 1)
inline double rel_error(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return INFINITY;
  double diff = 0, scale = 1;
  for (int64_t i = 0; i < b.numel(); ++i) {
    diff = std::max(diff, std::abs(double(a.data<float>()[i]) - double(b.data<float>()[i])));
    scale = std::max(scale, std::abs(double(b.data<float>()[i])));
  }
  return diff / scale;
}

// 10 log10(sum b^2 / sum (a - b)^2) in dB (infinity when equal)
inline double sqnr_db(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return -INFINITY;
  double sig = 0, err = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    sig += y * y;
    err += (x - y) * (x - y);
  }
  return err == 0 ? INFINITY : 10 * std::log10(sig / err);
}

struct AlgoRun {
  runtime::TensorMap out;
  std::string algorithm;  // what the session chose for node `node`
};

// Runs `g` with the given --algo values; reports the algorithm chosen for `node`.
inline AlgoRun run_with_algo(const ir::Graph& g, const runtime::TensorMap& in, const std::vector<std::string>& algo,
                             const std::string& node, int threads = 1) {
  runtime::SessionOptions o;
  o.threads = threads;
  for (auto& a : algo) o.algo.add(a);
  runtime::Session s(g, o);
  AlgoRun r;
  r.out = s.run(in);
  for (size_t i = 0; i < s.num_steps(); ++i)
    if (s.step_node(i).name == node) r.algorithm = s.step_node(i).meta["software"].value("algorithm", "");
  return r;
}

}  // namespace joule::testing
