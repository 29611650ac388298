// The activation memory plan: buffers alive at the same step never overlap, dead buffers are
// reused, views share their input's buffer, a value computed in place takes over the buffer of
// an input read for the last time, and the arena never leaks into returned outputs.
#include <gtest/gtest.h>

#include <random>

#include "graph_builder.h"
#include "joule/runtime/memory_plan.h"
#include "joule/runtime/session.h"
#include "test_tensors.h"

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
      } else if (i > 0 && std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
        p.reuse_of = std::uniform_int_distribution<int>(0, i - 1)(rng);  // granted or not
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

// In place (reuse_of) is granted only where the input's whole buffer is last read at the
// value's producer, both are planned and the input's buffer is large enough.
TEST(MemoryPlan, InPlaceOnlyWhereTheInputDies) {
  std::vector<runtime::PlannedValue> v(7);
  v[0] = {1000, 0, 1, -1, -1};  // read last at step 1
  v[1] = {1000, 1, 2, -1, 0};   // made at step 1 over v0: granted
  v[2] = {1000, 2, 3, -1, 1};   // made at step 2 over v1 (read last at 2): granted, a chain
  v[3] = {1000, 3, 6, -1, -1};  // read until step 6 ...
  v[4] = {1000, 4, 5, -1, 3};   // ... so not at step 4
  v[5] = {2000, 5, 6, -1, 4};   // larger than the input's buffer
  v[6] = {0, 6, 7, -1, 5};      // not planned (a graph output)
  const runtime::MemoryPlan plan = runtime::plan_memory(v);
  EXPECT_EQ(plan.offset[1], plan.offset[0]);
  EXPECT_EQ(plan.offset[2], plan.offset[0]);
  EXPECT_NE(plan.offset[4], plan.offset[3]);
  EXPECT_NE(plan.offset[5], plan.offset[4]);
  EXPECT_EQ(plan.offset[6], -1);
  EXPECT_GE(plan.offset[5], 0);
}

// A fused conv whose residual nothing reads afterwards writes its output over it (one buffer for
// both; onednn here, in N,C,H,W with reorders; ConvAlgorithms.ResidualInPlaceMatchesNchw checks
// the N,H,W,C kernels): the outputs are the reference kernel's, and an observer that reads the
// inputs after the node sees the residual as it was.
TEST(MemoryPlan, ResidualConvComputesInPlace) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 8, 6, 6});
  b.init("w", joule::testing::random_tensor({8, 8, 3, 3}, 1, -0.2f, 0.2f)).init("bias", joule::testing::random_tensor({8}, 2));
  b.node("Neg", {"x"}, {"z"});
  b.node("FusedConv", {"x", "w", "bias", "z"}, {"y"},
         {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"activation", std::string("Relu")},
          {"activation_params", std::vector<float>{}}},
         "conv");
  b.node("Neg", {"y"}, {"out"}).output("out");
  ir::Graph g = b.build();
  g.nodes[1]->domain = "joule";
  g.opsets["joule"] = 1;
  const runtime::TensorMap in = {{"x", joule::testing::random_tensor({1, 8, 6, 6}, 3)}};
  runtime::SessionOptions ref_options;
  ref_options.threads = 1;
  ref_options.algo.add("reference");
  runtime::Session ref(g, ref_options);
  EXPECT_EQ(ref.memory_plan().planned_buffers, 2u);  // the reference kernel does not
  const Tensor want = ref.run(in).at("out");

  runtime::SessionOptions o;
  o.threads = 1;
  o.algo.add("conv=onednn");
  runtime::Session s(g, o);
  EXPECT_EQ(s.memory_plan().planned_buffers, 1u);  // z and y in one buffer
  struct SeesResidual : runtime::Observer {
    Tensor z;
    void after_node(size_t, const ir::Node& n, const std::vector<const Tensor*>& inputs,
                    const std::vector<Tensor>&) override {
      if (n.op_type == "FusedConv") z = inputs[3]->clone();
    }
  } seen;
  for (bool observed : {false, true}) {
    if (observed) s.add_observer(&seen);
    const Tensor got = s.run(in).at("out");
    for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5);
  }
  ASSERT_TRUE(seen.z.defined());
  for (int64_t i = 0; i < seen.z.numel(); ++i) ASSERT_EQ(seen.z.data<float>()[i], -in.at("x").data<float>()[i]);
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
