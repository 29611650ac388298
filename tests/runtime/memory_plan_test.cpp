// The activation memory plan: buffers alive at the same step never overlap, dead buffers are
// reused, views share their input's buffer, and the arena never leaks into returned outputs.
#include <gtest/gtest.h>

#include <random>

#include "graph_builder.h"
#include "joule/runtime/memory_plan.h"
#include "joule/runtime/session.h"

using namespace joule;
using joule::testing::GraphBuilder;

namespace {

TEST(MemoryPlan, RandomLifetimesNeverOverlapAndReuse) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = std::uniform_int_distribution<int>(1, 40)(rng);
    std::vector<runtime::PlannedValue> v(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      auto& p = v[static_cast<size_t>(i)];
      p.def = i;
      p.last = i + std::uniform_int_distribution<int>(0, 6)(rng);
      p.bytes = std::uniform_int_distribution<int>(0, 5)(rng) == 0 ? 0 : std::uniform_int_distribution<size_t>(1, 5000)(rng);
      if (i > 0 && std::uniform_int_distribution<int>(0, 4)(rng) == 0) {
        p.alias_of = i - 1;
        p.bytes = v[static_cast<size_t>(i - 1)].bytes;
      }
    }
    const runtime::MemoryPlan plan = runtime::plan_memory(v);
    EXPECT_LE(plan.arena_bytes, plan.naive_bytes);
    // Effective lifetime of each value's buffer: the union over its alias group.
    for (int a = 0; a < n; ++a) {
      const auto& pa = v[static_cast<size_t>(a)];
      const long long oa = plan.offset[static_cast<size_t>(a)];
      if (pa.bytes == 0) {
        EXPECT_EQ(oa, -1);
      }
      if (pa.alias_of >= 0 && oa >= 0) {
        EXPECT_EQ(oa, plan.offset[static_cast<size_t>(pa.alias_of)]);
      }
      if (oa < 0) continue;
      EXPECT_EQ(oa % 64, 0);
      EXPECT_LE(static_cast<size_t>(oa) + pa.bytes, plan.arena_bytes);
      for (int b = a + 1; b < n; ++b) {
        const auto& pb = v[static_cast<size_t>(b)];
        const long long ob = plan.offset[static_cast<size_t>(b)];
        if (ob < 0 || ob == oa) continue;  // different buffers only
        const bool time = pa.def <= pb.last && pb.def <= pa.last;
        const bool space = oa < ob + static_cast<long long>(pb.bytes) && ob < oa + static_cast<long long>(pa.bytes);
        EXPECT_FALSE(time && space) << "values " << a << " and " << b << " overlap (trial " << trial << ")";
      }
    }
  }
}

TEST(MemoryPlan, ChainReusesTwoBuffers) {
  // x -> Conv -> Relu -> Neg -> Relu -> Neg -> Conv -> y: every intermediate has the size of
  // the first; alternating two buffers is enough.
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 4, 16, 16});
  Tensor w(DType::Float32, {4, 4, 1, 1});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = (i % 5 == 0) ? 1.f : 0.f;
  b.init("w", w);
  b.node("Conv", {"x", "w"}, {"c0"}).node("Relu", {"c0"}, {"a"}).node("Neg", {"a"}, {"b"});
  b.node("Relu", {"b"}, {"c"}).node("Neg", {"c"}, {"d"}).node("Conv", {"d", "w"}, {"y"}).output("y");
  runtime::Session s(b.build(), {1, {}, {}});
  const auto& plan = s.memory_plan();
  const size_t one = 4 * 16 * 16 * sizeof(float);
  EXPECT_EQ(plan.planned_buffers, 5u);
  EXPECT_EQ(plan.naive_bytes, 5 * one);
  EXPECT_EQ(plan.arena_bytes, 2 * one);
}

TEST(MemoryPlan, ReturnedOutputsAndViewsSurviveTheNextRun) {
  // Conv -> Reshape (a view, planned with its input) -> Relu -> output, plus an intermediate
  // that is also a graph output (never in the arena).
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 3, 8, 8});
  Tensor w(DType::Float32, {6, 3, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.01f * static_cast<float>(i % 17) - 0.05f;
  b.init("w", w).init("shape", Tensor::from_vector<int64_t>({1, -1}, {2}));
  b.node("Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Reshape", {"c", "shape"}, {"f"})
      .node("Relu", {"f"}, {"y"})
      .node("Neg", {"c"}, {"z"})
      .output("y")
      .output("z");
  runtime::Session s(b.build(), {1, {}, {}});
  auto input = [](float v) {
    Tensor t(DType::Float32, {1, 3, 8, 8});
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v * static_cast<float>(i % 7);
    return t;
  };
  runtime::TensorMap first = s.run({{"x", input(1.f)}});
  const Tensor y1 = first.at("y").clone(), z1 = first.at("z").clone();
  runtime::TensorMap second = s.run({{"x", input(-2.f)}});
  for (int64_t i = 0; i < y1.numel(); ++i) ASSERT_EQ(first.at("y").data<float>()[i], y1.data<float>()[i]);
  for (int64_t i = 0; i < z1.numel(); ++i) ASSERT_EQ(first.at("z").data<float>()[i], z1.data<float>()[i]);
  // And the second run is right: z = -conv, y = relu(conv) flattened.
  for (int64_t i = 0; i < z1.numel(); ++i)
    EXPECT_FLOAT_EQ(second.at("y").data<float>()[i], std::max(0.f, -second.at("z").data<float>()[i]));
}

}  // namespace
