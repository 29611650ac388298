// Gemm, MatMul and joule FusedMatMul fast algorithms against the reference kernels: transposes,
// alpha/beta, every broadcast of C, batched MatMul with broadcasting and 1-D operands, every
// epilogue (bias, residual, activation incl. GELU), threads 1 and 2. The bf16 kernels (onednn_bf16
// on a constant B, onednn_bf16_rt on two computed operands, where the CPU has AVX512-BF16 or AMX)
// within bfloat16's rounding.
#include <fmt/core.h>

#include "joule/core/cpu_features.h"

#include "graph_builder.h"
#include "kernel_test_util.h"

namespace joule {
namespace {

using testing::GraphBuilder;

// Every algorithm of the node's class (OpenBLAS, oneDNN sgemm and, when `packed`, the oneDNN matmul
// primitive on a constant B, in float32 and in bfloat16) against the reference. bfloat16 operands
// keep 8 significant bits: the largest error stays under 3 % of the largest output (of 1 where
// Clip bounds the output below the sums it rounds), where
// a wrong layout, transpose or epilogue errs by its whole size.
int small_m_runs = 0;  // products the small_m kernel computed in expect_match
int bf16_rt_runs = 0;  // and the onednn_bf16_rt kernel

void expect_match(const ir::Graph& g, const runtime::TensorMap& in, int threads, const std::string& what,
                  bool packed) {
  const auto want = testing::run_with_algo(g, in, {"reference"}, "op", threads);
  std::vector<std::string> algos = {"blas", "onednn"};
  if (packed) algos.push_back("onednn_packed");
  if (packed && bf16_unsupported_reason().empty()) algos.push_back("onednn_bf16");
  for (const std::string& algo : algos) {
    const auto got = testing::run_with_algo(g, in, {std::string("op=") + algo}, "op", threads);
    ASSERT_EQ(got.algorithm, algo) << what;
    EXPECT_LE(testing::rel_error(got.out.at("y"), want.out.at("y")), algo == "onednn_bf16" ? 3e-2 : 1e-5)
        << algo << " " << what;
  }
  // onednn_bf16_rt: MatMul with both operands converted to bfloat16 at every run, where the
  // batches do not broadcast (elsewhere the rule falls back to the reference).
  const std::string& op = g.nodes.back()->op_type;
  if ((op == "MatMul" || op == "FusedMatMul") && bf16_unsupported_reason().empty()) {
    const auto rt = testing::run_with_algo(g, in, {"op=onednn_bf16_rt,reference"}, "op", threads);
    if (rt.algorithm == "onednn_bf16_rt") {
      ++bf16_rt_runs;
      EXPECT_LE(testing::rel_error(rt.out.at("y"), want.out.at("y")), 3e-2) << "onednn_bf16_rt " << what;
    }
  }
  // small_m takes 2 to 16 rows of A (on AVX2 + FMA); elsewhere the rule falls back.
  const auto got = testing::run_with_algo(g, in, {"op=small_m,reference"}, "op", threads);
  if (got.algorithm == "small_m") {
    ++small_m_runs;
    EXPECT_LE(testing::rel_error(got.out.at("y"), want.out.at("y")), 1e-5) << "small_m " << what;
  }
}

TEST(GemmAlgorithms, TransposesAlphaBetaAndCBroadcasts) {
  std::mt19937 rng(7);
  auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 60; ++i) {
    const int64_t M = r(1, 70), N = r(1, 90), K = r(1, 80);
    const int64_t ta = r(0, 1), tb = r(0, 1);
    const int c_kind = static_cast<int>(r(0, 6));  // none, [], [N], [1,N], [M,1], [M,N], [1,1]
    const std::vector<Shape> c_shapes = {{}, {}, {N}, {1, N}, {M, 1}, {M, N}, {1, 1}};
    GraphBuilder b;
    b.input("a", DType::Float32, ta ? Shape{K, M} : Shape{M, K});
    b.init("w", testing::random_tensor(tb ? Shape{N, K} : Shape{K, N}, static_cast<uint32_t>(i)));
    std::vector<std::string> ins = {"a", "w"};
    if (c_kind > 0) {
      b.init("c", testing::random_tensor(c_shapes[static_cast<size_t>(c_kind)], 1000u + i));
      ins.push_back("c");
    }
    const float alpha = r(0, 1) ? 1.f : 0.5f, beta = r(0, 2) == 0 ? 0.f : r(0, 1) ? 1.f : 2.f;
    b.node("Gemm", ins, {"y"}, {{"transA", ta}, {"transB", tb}, {"alpha", alpha}, {"beta", beta}}, "op").output("y");
    const ir::Graph g = b.build();
    const runtime::TensorMap in = {{"a", testing::random_tensor(g.type_of("a")->static_shape(), 50u + i)}};
    // The packed kernel takes transA = 0 and C as a row (or scalar) bias.
    const bool c_row = c_kind <= 3 || c_kind == 6 || beta == 0.f;
    expect_match(g, in, static_cast<int>(r(1, 2)),
                 fmt::format("M{} N{} K{} tA{} tB{} C{} alpha{} beta{}", M, N, K, ta, tb, c_kind, alpha, beta),
                 ta == 0 && c_row);
  }
}

// A's rows known only at run time (a detector's boxes): Compress keeps a data-dependent number
// of rows, from none to all, and the Gemm after it still runs on the SGEMM algorithms.
TEST(GemmAlgorithms, RowsKnownOnlyAtRunTime) {
  GraphBuilder b;
  b.input("x", DType::Float32, {9, 13})
      .input("keep", DType::Bool, {9})
      .init("w", testing::random_tensor({7, 13}, 3))
      .init("c", testing::random_tensor({7}, 4))
      .node("Compress", {"x", "keep"}, {"rows"}, {{"axis", int64_t{0}}})
      .node("Gemm", {"rows", "w", "c"}, {"y"}, {{"transB", int64_t{1}}, {"beta", 0.5f}}, "op")
      .output("y");
  const ir::Graph g = b.build();
  for (const std::vector<bool>& keep : {std::vector<bool>(9, false), std::vector<bool>{1, 0, 1, 1, 0, 0, 1, 0, 1}, std::vector<bool>(9, true)}) {
    Tensor k(DType::Bool, {9});
    for (size_t i = 0; i < keep.size(); ++i) k.data<bool>()[i] = keep[i];
    const runtime::TensorMap in = {{"x", testing::random_tensor({9, 13}, 5)}, {"keep", k}};
    const auto want = testing::run_with_algo(g, in, {"reference"}, "op");
    for (const char* algo : {"blas", "onednn"}) {
      const auto got = testing::run_with_algo(g, in, {std::string("op=") + algo}, "op", 2);
      ASSERT_EQ(got.algorithm, algo);
      ASSERT_EQ(got.out.at("y").shape(), want.out.at("y").shape());
      if (want.out.at("y").numel() > 0) {
        EXPECT_LT(testing::rel_error(got.out.at("y"), want.out.at("y")), 1e-5) << algo;
      }
    }
  }
}

TEST(MatMulAlgorithms, BatchedBroadcastAnd1D) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{5, 7}, {7, 3}},         {{2, 3, 5, 7}, {7, 9}},     {{2, 3, 5, 7}, {2, 3, 7, 4}},
      {{4, 1, 6, 8}, {3, 8, 2}}, {{7}, {7, 5}},             {{2, 4, 7}, {7}},
      {{1, 64, 96}, {96, 384}}, {{3, 197, 64}, {3, 64, 197}}, {{8}, {8}},
  };
  uint32_t seed = 1;
  for (auto& [as, bs] : cases) {
    for (int threads : {1, 2}) {
      for (bool weight : {false, true}) {
        GraphBuilder b;
        b.input("a", DType::Float32, as);
        if (weight)
          b.init("b", testing::random_tensor(bs, seed++));
        else
          b.input("b", DType::Float32, bs);
        b.node("MatMul", {"a", "b"}, {"y"}, {}, "op").output("y");
        const ir::Graph g = b.build();
        runtime::TensorMap in = {{"a", testing::random_tensor(as, seed++)}};
        if (!weight) in["b"] = testing::random_tensor(bs, seed++);
        expect_match(g, in, threads,
                     fmt::format("{} x {} weight {} threads {}", shape_str(as), shape_str(bs), weight, threads),
                     weight && bs.size() == 2);
      }
    }
  }
  if (bf16_unsupported_reason().empty()) {
    EXPECT_GE(bf16_rt_runs, 20);  // all but the broadcast batches
  }
}

TEST(MatMulAlgorithms, FusedMatMulEpilogues) {
  std::mt19937 rng(11);
  auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const std::vector<std::pair<std::string, std::vector<float>>> acts = {
      {"", {}}, {"Relu", {}}, {"LeakyRelu", {0.1f}}, {"Clip", {-0.5f, 0.7f}}, {"Gelu", {}}};
  for (int i = 0; i < 40; ++i) {
    const int64_t M = r(1, 70), N = r(1, 90), K = r(1, 80);
    const Shape as = r(0, 1) ? Shape{M, K} : Shape{2, M, K};
    Shape ys = as;
    ys.back() = N;
    const bool bias = r(0, 1), residual = r(0, 1), weight = r(0, 3) != 0;
    const auto& [act, params] = acts[static_cast<size_t>(r(0, 4))];
    GraphBuilder b;
    b.input("a", DType::Float32, as);
    if (weight)
      b.init("w", testing::random_tensor({K, N}, 100u + i));
    else
      b.input("w", DType::Float32, {K, N});
    std::vector<std::string> ins = {"a", "w", bias ? "bias" : ""};
    if (bias) b.init("bias", testing::random_tensor(r(0, 1) ? Shape{N} : Shape{1, N}, 200u + i));
    if (residual) {
      b.input("z", DType::Float32, ys);
      ins.push_back("z");
    }
    b.node("FusedMatMul", ins, {"y"}, {{"activation", act}, {"activation_params", params}}, "op").output("y");
    b.g.nodes.back()->domain = "joule";
    b.g.opsets["joule"] = 1;
    const ir::Graph g = b.build();
    runtime::TensorMap in = {{"a", testing::random_tensor(as, 300u + i)}};
    if (!weight) in["w"] = testing::random_tensor({K, N}, 400u + i);
    if (residual) in["z"] = testing::random_tensor(ys, 500u + i);
    expect_match(g, in, static_cast<int>(r(1, 2)),
                 fmt::format("{} x [{},{}] bias {} residual {} act '{}' weight {}", shape_str(as), K, N, bias, residual,
                             act, weight),
                 weight);
  }
}

// small_m where it is made for: 2 to 16 rows against wide constant matrices, K a multiple of
// 1024 (rows of A that far apart share an L1 set: the kernel interleaves them), every Gemm
// transpose of B, alpha, a bias row, and every FusedMatMul epilogue; 1 and 2 threads.
TEST(GemmAlgorithms, SmallMRowsAgainstWideConstantB) {
  if (!cpu_features().avx2_fma) GTEST_SKIP() << "small_m needs AVX2 with FMA";
  std::mt19937 rng(23);
  auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const int before = small_m_runs;
  for (int i = 0; i < 12; ++i) {
    const int64_t M = r(2, 16), K = r(0, 2) == 0 ? 1024 * r(1, 3) : r(1, 600), N = r(1, 300);
    const int64_t tb = r(0, 1);
    GraphBuilder b;
    b.input("a", DType::Float32, {M, K});
    b.init("w", testing::random_tensor(tb ? Shape{N, K} : Shape{K, N}, 600u + i));
    b.init("c", testing::random_tensor({N}, 700u + i));
    b.node("Gemm", {"a", "w", "c"}, {"y"}, {{"transB", tb}, {"alpha", 0.5f}, {"beta", 2.f}}, "op").output("y");
    const ir::Graph g = b.build();
    const runtime::TensorMap in = {{"a", testing::random_tensor({M, K}, 800u + i)}};
    expect_match(g, in, static_cast<int>(r(1, 2)), fmt::format("Gemm M{} K{} N{} tB{}", M, K, N, tb), true);
  }
  EXPECT_EQ(small_m_runs - before, 12);
  // Picked by guess for a classifier at batch 8 on a CPU without AVX-512 (AlexNet's shape,
  // smaller): the SGEMMs pack B again on every call.
  if (!cpu_features().avx512) {
    GraphBuilder b;
    b.input("a", DType::Float32, {8, 4096});
    b.init("w", testing::random_tensor({1024, 4096}, 5));
    b.node("Gemm", {"a", "w"}, {"y"}, {{"transB", int64_t{1}}}, "op").output("y");
    const ir::Graph g = b.build();
    const auto got = testing::run_with_algo(g, {{"a", testing::random_tensor({8, 4096}, 6)}}, {"guess"}, "op");
    EXPECT_EQ(got.algorithm, "small_m");
  }
}

}  // namespace
}  // namespace joule
