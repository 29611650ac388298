// Algorithm selection (policies, class and node rules, preference lists, refusals, YAML
// files) and the tuning cache (written, read back, invalidated by a key change, a corrupt
// file reported and ignored).
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "graph_builder.h"
#include "joule/core/cpu_features.h"
#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/kernels/select.h"
#include "kernel_test_util.h"

namespace joule {
namespace {

namespace fs = std::filesystem;
using testing::GraphBuilder;
using Ints = std::vector<int64_t>;

// Two convs: a 3x3 stride-1 one and a strided one (which Winograd / FFT refuse), a Reshape (the
// view class), a Gemm, and a Sign (only the reference kernel).
ir::Graph model() {
  return GraphBuilder()
      .input("x", DType::Float32, {1, 4, 12, 12})
      .init("w1", testing::random_tensor({8, 4, 3, 3}, 1))
      .init("w2", testing::random_tensor({8, 8, 3, 3}, 2))
      .init("fc", testing::random_tensor({8 * 6 * 6, 5}, 3))
      .init("shape", Tensor::from_vector<int64_t>({1, -1}, {2}))
      .node("Conv", {"x", "w1"}, {"c1"}, {{"pads", Ints{1, 1, 1, 1}}}, "conv_a")
      .node("Conv", {"c1", "w2"}, {"c2"}, {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}, "conv_b")
      .node("Reshape", {"c2", "shape"}, {"f"}, {}, "flat")
      .node("Gemm", {"f", "fc"}, {"g"}, {}, "fc")
      .node("Sign", {"g"}, {"y"}, {}, "sgn")
      .output("y")
      .build();
}

std::map<std::string, nlohmann::json> plan(const ir::Graph& g, const std::vector<std::string>& algo,
                                            const std::string& cache = "", int threads = 1) {
  runtime::SessionOptions o;
  o.threads = threads;
  for (auto& a : algo) o.algo.add(a);
  o.algo.tuning_cache = cache;
  runtime::Session s(g, o);
  std::map<std::string, nlohmann::json> r;
  for (size_t i = 0; i < s.num_steps(); ++i) r[s.step_node(i).name] = s.step_node(i).meta["software"];
  return r;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::BadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Select, PoliciesAndRules) {
  const ir::Graph g = model();
  auto p = plan(g, {"reference"});
  for (auto& [name, sw] : p) EXPECT_EQ(sw["algorithm"], "reference") << name;
  p = plan(g, {});
  EXPECT_EQ(p["conv_a"]["algorithm_source"], "guess");
  EXPECT_NE(p["conv_a"]["algorithm"], "reference");
  EXPECT_EQ(p["flat"]["algorithm"], "alias");
  EXPECT_EQ(p["sgn"]["algorithm"], "reference");
  // A node rule beats the class rule; the rest follow the policy.
  p = plan(g, {"reference", "conv=onednn", "conv_b=reference"});
  EXPECT_EQ(p["conv_a"]["algorithm"], "onednn");
  EXPECT_EQ(p["conv_a"]["algorithm_source"], "forced");
  EXPECT_EQ(p["conv_b"]["algorithm"], "reference");
  EXPECT_EQ(p["fc"]["algorithm"], "reference");
}

TEST(Select, RefusalsNameTheNodeAndPreferenceListsFallBack) {
  const ir::Graph g = model();
  const auto& names = kernels::algorithms_for("conv");
  bool has_winograd = false;
  for (auto* a : names) has_winograd = has_winograd || std::string(a->name) == "winograd";
  if (has_winograd && cpu_features().avx2_fma) {  // joule's Winograd needs AVX2 + FMA or AVX-512
    const std::string e = error_of([&] { plan(g, {"conv=winograd"}); });
    EXPECT_NE(e.find("conv_b"), std::string::npos) << e;
    EXPECT_NE(e.find("winograd"), std::string::npos) << e;
    auto p = plan(g, {"conv=winograd,onednn"});
    EXPECT_EQ(p["conv_a"]["algorithm"], "winograd");
    EXPECT_EQ(p["conv_b"]["algorithm"], "onednn");
    EXPECT_EQ(p["conv_b"]["algorithm_source"], "preference");
  }
  EXPECT_NE(error_of([&] { plan(g, {"conv=nosuch"}); }).find("unknown algorithm 'nosuch'"), std::string::npos);
  EXPECT_NE(error_of([&] { plan(g, {"conv=blas"}); }).find("not an algorithm for conv"), std::string::npos);
  EXPECT_NE(error_of([&] { plan(g, {"nosuchnode=onednn"}); }).find("neither an op class"), std::string::npos);
  EXPECT_NE(error_of([&] { plan(g, {"sgn=onednn"}); }).find("only the reference kernel"), std::string::npos);
  EXPECT_NE(error_of([&] { plan(g, {"fastest"}); }).find("expected guess, auto, reference"), std::string::npos);
  EXPECT_NE(error_of([&] { plan(g, {"conv="}); }).find("empty algorithm name"), std::string::npos);
}

TEST(Select, YamlFile) {
  const fs::path dir = fs::temp_directory_path() / ("joule_select_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string f = (dir / "algo.yaml").string();
  write_file_atomic(f, "default: reference\nconv: [onednn]\nfc: blas\n");
  kernels::AlgoSpec s;
  s.add_file(f);
  EXPECT_EQ(s.policy, "reference");
  ASSERT_EQ(s.rules.size(), 2u);
  EXPECT_EQ(s.rules[0].first, "conv");
  EXPECT_EQ(s.rules[1].second, std::vector<std::string>{"blas"});
  write_file_atomic(f, "conv: {a: 1}\n");
  EXPECT_NE(error_of([&] { kernels::AlgoSpec t; t.add_file(f); }).find("expected an algorithm name"), std::string::npos);
  write_file_atomic(f, "default: fastest\n");
  EXPECT_NE(error_of([&] { kernels::AlgoSpec t; t.add_file(f); }).find("default must be"), std::string::npos);
  write_file_atomic(f, "conv: [onednn\n");
  EXPECT_NE(error_of([&] { kernels::AlgoSpec t; t.add_file(f); }).find("not valid YAML"), std::string::npos);
  EXPECT_NE(error_of([&] { kernels::AlgoSpec t; t.add_file((dir / "missing.yaml").string()); }).find("cannot read"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(TuningCache, WrittenReadBackInvalidatedAndCorruptIgnored) {
  const fs::path dir = fs::temp_directory_path() / ("joule_tuning_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string cache = (dir / "sub" / "tuning.json").string();
  const ir::Graph g = model();
  auto p = plan(g, {"auto"}, cache);
  EXPECT_EQ(p["conv_a"]["algorithm_source"], "auto (measured)");
  EXPECT_GE(p["conv_a"]["algorithm_ms"].size(), 1u);
  ASSERT_TRUE(fs::exists(cache));
  const auto j = nlohmann::json::parse(read_file(cache));
  EXPECT_EQ(j["schema"], 1);
  EXPECT_GE(j["entries"].size(), 1u);  // every node with more than one candidate
  // Read back: same choice, no measuring.
  auto q = plan(g, {"auto"}, cache);
  EXPECT_EQ(q["conv_a"]["algorithm_source"], "auto (cached)");
  EXPECT_EQ(q["conv_a"]["algorithm"], p["conv_a"]["algorithm"]);
  // Another key (thread count) is measured again and added.
  auto t = plan(g, {"auto"}, cache, 2);
  EXPECT_EQ(t["conv_a"]["algorithm_source"], "auto (measured)");
  EXPECT_GT(nlohmann::json::parse(read_file(cache))["entries"].size(), j["entries"].size());
  // A corrupt file: reported, ignored, then replaced by a good one.
  for (const char* bad : {"{not json", "{\"schema\": 99, \"entries\": {}}", "[1,2]",
                          "{\"schema\": 1, \"entries\": {\"k\": {\"algorithm\": 3}}}"}) {
    write_file_atomic(cache, bad);
    ::testing::internal::CaptureStderr();
    auto c = plan(g, {"auto"}, cache);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("ignored"), std::string::npos) << bad;
    EXPECT_EQ(c["conv_a"]["algorithm_source"], "auto (measured)") << bad;
    EXPECT_NO_THROW(nlohmann::json::parse(read_file(cache))) << bad;
  }
  fs::remove_all(dir);
}

TEST(TuningCache, KeyCoversShapesAttributesThreadsCpuAndVersion) {
  const ir::Graph g = model();
  const ir::Node& n = *g.nodes[0];
  kernels::NodeView v{n, {g.type_of("x"), g.type_of("w1")}, {g.type_of("c1")}, {nullptr, nullptr}, 1};
  const std::string k1 = kernels::tuning_key(v);
  for (const char* part : {"Conv", "float32[1,4,12,12]", "pads", "threads", "cpu", "joule"})
    EXPECT_NE(k1.find(part), std::string::npos) << part;
  v.threads = 2;
  EXPECT_NE(kernels::tuning_key(v), k1);
}

}  // namespace
}  // namespace joule
