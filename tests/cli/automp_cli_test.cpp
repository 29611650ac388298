// joule automp on a model whose sensitive layer is known by construction: three Gemm layers
// quantized to int4 per-tensor weights; the middle one carries one huge weight on an input that
// is always zero, so it changes nothing in float but its per-tensor int4 scale rounds every
// other weight of that layer to zero. AutoMP must move exactly that layer up, and the YAML it
// writes must reproduce the choice.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "cli/cli_util.h"
#include "graph_builder.h"
#include "test_tensors.h"
#include "joule/core/file_util.h"
#include "joule/core/npy.h"
#include "joule/onnx/model_io.h"

namespace fs = std::filesystem;
using namespace joule;

TEST(AutoMpCli, MovesExactlyTheLayerThatIsSensitiveByConstruction) {
  const fs::path dir = joule::testing::scratch_dir("automp_cli");
  Tensor w1 = joule::testing::random_tensor({16, 16}, 1, -0.25f, 0.25f), b1 = joule::testing::random_tensor({16}, 2, 0.1f, 0.3f);
  for (int k = 0; k < 16; ++k) w1.data<float>()[3 * 16 + k] = 0;  // hidden unit 3: relu(-1) = 0 always
  b1.data<float>()[3] = -1;
  Tensor w2 = joule::testing::random_tensor({16, 16}, 3, -0.25f, 0.25f);
  w2.data<float>()[0 * 16 + 3] = 4;  // reads only hidden unit 3
  ir::Graph g = joule::testing::GraphBuilder()
                    .input("x", DType::Float32, {1, 16})
                    .init("w1", w1)
                    .init("b1", b1)
                    .init("w2", w2)
                    .init("b2", joule::testing::random_tensor({16}, 4, 0.1f, 0.3f))
                    .init("w3", joule::testing::random_tensor({8, 16}, 5, -0.25f, 0.25f))
                    .init("b3", joule::testing::random_tensor({8}, 6, -0.1f, 0.1f))
                    .node("Gemm", {"x", "w1", "b1"}, {"h1"}, {{"transB", int64_t{1}}}, "fc1")
                    .node("Relu", {"h1"}, {"r1"}, {}, "relu1")
                    .node("Gemm", {"r1", "w2", "b2"}, {"h2"}, {{"transB", int64_t{1}}}, "fc2")
                    .node("Relu", {"h2"}, {"r2"}, {}, "relu2")
                    .node("Gemm", {"r2", "w3", "b3"}, {"y"}, {{"transB", int64_t{1}}}, "fc3")
                    .output("y")
                    .build();
  const std::string model = (dir / "mlp.onnx").string();
  onnx::save_model(g, model);
  const std::string data = (dir / "x.npy").string();
  save_npy(joule::testing::random_tensor({32, 16}, 7, -1, 1), data);
  const std::string cfg = (dir / "w4.yaml").string();
  write_file_atomic(cfg, "default:\n  weight: {format: int, bits: 4, symmetric: true, granularity: per_tensor}\n");

  const fs::path out = dir / "run";
  joule::testing::CliResult r = joule::testing::run_joule("automp " + model + " --config " + cfg + " --calib " + data +
                                            " --sqnr-target 12 --ladder int8,fp32 --quiet --format json -o " +
                                            out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["met"].get<bool>());
  std::map<std::string, std::string> precision;
  for (auto& l : j["layers"]) precision[l["node"]] = l["precision"];
  EXPECT_EQ(precision["fc1"], "config");
  EXPECT_EQ(precision["fc2"], "int8");  // one rung is enough once the other weights survive
  EXPECT_EQ(precision["fc3"], "config");
  ASSERT_EQ(j["summary"].size(), 3u);
  EXPECT_LT(j["summary"][1]["score"].get<double>(), 12.0);  // everything int4: destroyed
  EXPECT_GE(j["summary"][2]["score"].get<double>(), 12.0);
  EXPECT_LT(j["summary"][2]["weight_bytes"].get<double>(), j["summary"][0]["weight_bytes"].get<double>());

  // The written config reapplies the choice.
  ASSERT_TRUE(fs::exists(out / "automp.yaml"));
  joule::testing::CliResult d = joule::testing::run_joule("quantize " + model + " --config " + (out / "automp.yaml").string() +
                                            " --dry-run --format json");
  ASSERT_EQ(d.code, 0) << d.out;
  auto plan = nlohmann::json::parse(d.out);
  std::map<std::string, std::string> weight_format;
  for (auto& n : plan["nodes"]) weight_format[n["node"]] = n["roles"]["weight"]["format"].dump();
  EXPECT_NE(weight_format["fc2"].find("int8"), std::string::npos) << weight_format["fc2"];
  EXPECT_NE(weight_format["fc1"].find("int4"), std::string::npos) << weight_format["fc1"];

  // Bad input: an unknown rung is one line, exit 2.
  joule::testing::CliResult bad = joule::testing::run_joule("automp " + model + " --config " + cfg + " --calib " + data +
                                              " --sqnr-target 12 --ladder int8,posit16 --quiet");
  EXPECT_EQ(bad.code, 2) << bad.out;
}
