// Runs the joule binary as a user would: exit codes, one-line errors, files written.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "graph_builder.h"
#include "joule/core/cpu_features.h"
#include "joule/core/file_util.h"
#include "joule/core/npy.h"
#include "joule/onnx/model_io.h"

using namespace joule;
using joule::testing::GraphBuilder;
namespace fs = std::filesystem;

namespace {
using Result = joule::testing::CliResult;
Result joule_cmd(const std::string& args) { return joule::testing::run_joule(args); }

fs::path dir() {
  static fs::path d = joule::testing::scratch_dir("cli_test");
  return d;
}

std::string model_path() {
  auto p = dir() / "m.onnx";
  if (!fs::exists(p)) {
    ir::Graph g = GraphBuilder()
                      .input("in:0", DType::Float32, {2, 3})
                      .init("w", joule::testing::iota_tensor({3, 4}, 0.f, 0.5f))
                      .node("MatMul", {"in:0", "w"}, {"mm"})
                      .node("Relu", {"mm"}, {"out/1"})
                      .output("out/1")
                      .build();
    onnx::save_model(g, p.string());
  }
  return p.string();
}

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }
}  // namespace

TEST(Cli, InfoTableAndJson) {
  Result r = joule_cmd("info " + model_path());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("MatMul"), std::string::npos);
  EXPECT_NE(r.out.find("all 2 nodes supported"), std::string::npos);
  Result j = joule_cmd("info --format json " + model_path());
  ASSERT_EQ(j.code, 0) << j.out;
  auto js = nlohmann::json::parse(j.out);
  EXPECT_EQ(js["parameters"].get<int>(), 12);
  EXPECT_DOUBLE_EQ(js["total"]["macs"].get<double>(), 2.0 * 3 * 4);
  EXPECT_EQ(js["inputs"][0]["shape"].get<std::string>(), "[2,3]");
}

TEST(Cli, RunWritesSanitisedOutputNames) {
  Tensor x = joule::testing::iota_tensor({2, 3}, -1.f);
  save_npy(x, (dir() / "x.npy").string());
  auto out = dir() / "out";
  Result r = joule_cmd("run " + model_path() + " -i " + (dir() / "x.npy").string() + " -o " + out.string() + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.out;
  Tensor y = load_npy((out / "out_1.npy").string());
  EXPECT_EQ(y.shape(), (Shape{2, 4}));
  // row 0 of x = [-1, 0, 1]; w[:,0] = [0, 2, 4] -> 4
  EXPECT_FLOAT_EQ(y.data<float>()[0], 4.f);
  // NAME=FILE binding works too, and a .pb input.
  onnx::save_tensor_pb(x, "in:0", (dir() / "x.pb").string());
  Result r2 = joule_cmd("run " + model_path() + " -i in:0=" + (dir() / "x.pb").string());
  EXPECT_EQ(r2.code, 0) << r2.out;
}

// A model whose output is a sequence: -o writes one file per item, json says what it holds.
TEST(Cli, RunWritesASequenceOutputItemByItem) {
  joule::testing::GraphBuilder b;
  b.input("x", DType::Float32, {4, 3}).init("two", Tensor::scalar<int64_t>(2));
  b.node("SplitToSequence", {"x", "two"}, {"pieces"}).output("pieces");
  ir::Graph g = b.build();
  g.types["pieces"] = ir::TensorType::of(DType::Float32, {2, 3}).with_kind(ValueKind::Sequence);
  const std::string model = (dir() / "seq.onnx").string();
  write_file_atomic(model, onnx::serialize_model(g));
  save_npy(joule::testing::iota_tensor({4, 3}, 0.f), (dir() / "x43.npy").string());
  auto out = dir() / "seq_out";
  Result r = joule_cmd("run " + model + " -i " + (dir() / "x43.npy").string() + " -o " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("pieces seq(2 x float32"), std::string::npos) << r.out;
  Tensor second = load_npy((out / "pieces.1.npy").string());
  EXPECT_EQ(second.shape(), (Shape{2, 3}));
  EXPECT_EQ(second.data<float>()[0], 6.f);  // x[2, 0]
  EXPECT_FALSE(fs::exists(out / "pieces.npy"));
  Result j = joule_cmd("run " + model + " -i " + (dir() / "x43.npy").string() + " --format json");
  ASSERT_EQ(j.code, 0) << j.out;
  const auto o = nlohmann::json::parse(j.out)["outputs"][0];
  EXPECT_EQ(o["kind"], "sequence");
  EXPECT_EQ(o["items"], 2);
  Result info = joule_cmd("info " + model);
  EXPECT_NE(info.out.find("output  pieces                   seq(float32[?,3])"), std::string::npos) << info.out;
}

TEST(Cli, BadInputExitsTwoWithOneLine) {
  auto expect_bad = [](const std::string& args, const std::string& needle) {
    Result r = joule_cmd(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_EQ(lines(r.out), 1) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(needle), std::string::npos) << args << "\n" << r.out;
  };
  expect_bad("info /no/such/model.onnx", "no such file");
  write_file_atomic((dir() / "trunc.onnx").string(), read_file(model_path()).substr(0, 40));
  expect_bad("info " + (dir() / "trunc.onnx").string(), "not a valid ONNX model");
  // Unsupported ops: every one listed, with node names, by every command that loads the model
  // (a supported node after an unsupported one is not reported as reading a missing value).
  ir::Graph g = GraphBuilder()
                    .input("x", DType::Float32, {2})
                    .node("Frobnicate", {"x"}, {"a"}, {}, "frob1")
                    .node("Relu", {"a"}, {"a2"}, {}, "relu1")
                    .node("Twiddle", {"a2"}, {"b"}, {}, "twid1")
                    .output("b")
                    .build();
  onnx::save_model(g, (dir() / "unsup.onnx").string());
  Tensor x(DType::Float32, {2});
  save_npy(x, (dir() / "x2.npy").string());
  const std::string unsup = (dir() / "unsup.onnx").string(), x2 = " -i " + (dir() / "x2.npy").string();
  for (const std::string& cmd : {"run " + unsup + x2, "info " + unsup, "info --plan " + unsup, "bench " + unsup + x2,
                                 "profile " + unsup + x2})
    for (const char* node : {"frob1", "twid1"}) expect_bad(cmd, node);
  // Wrong input shape and dtype.
  save_npy(Tensor(DType::Float32, {3, 3}), (dir() / "bad_shape.npy").string());
  expect_bad("run " + model_path() + " -i " + (dir() / "bad_shape.npy").string(), "expected shape [2,3]");
  save_npy(Tensor(DType::Int64, {2, 3}), (dir() / "bad_type.npy").string());
  expect_bad("run " + model_path() + " -i " + (dir() / "bad_type.npy").string(), "expected float32");
  expect_bad("run " + model_path(), "missing input");
  expect_bad("run " + model_path() + " -i /no/x.npy", "no such file");
  expect_bad("graph " + model_path() + " -o " + (dir() / "g.bmpx").string(), "unknown output format");
  Result u = joule_cmd("frobnicate");
  EXPECT_EQ(u.code, 2);
}

TEST(Cli, NothingHalfWrittenOnFailure) {
  auto out = dir() / "never";
  save_npy(Tensor(DType::Float32, {3, 3}), (dir() / "bad.npy").string());
  Result r = joule_cmd("run " + model_path() + " -i " + (dir() / "bad.npy").string() + " -o " + out.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(fs::exists(out));
}

TEST(Cli, GraphWritesDotAndSvg) {
  Result r = joule_cmd("graph " + model_path() + " -o " + (dir() / "g.dot").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(read_file((dir() / "g.dot").string()).find("MatMul"), std::string::npos);
  Result s = joule_cmd("graph " + model_path() + " -o " + (dir() / "g.svg").string());
  ASSERT_EQ(s.code, 0) << s.out;
  EXPECT_NE(read_file((dir() / "g.svg").string()).find("<svg"), std::string::npos);
}

TEST(Cli, InfoInputShapeResolvesSymbolicDims) {
  ir::Graph g = GraphBuilder()
                    .input_sym("x", DType::Float32, {ir::Dim{-1, "N"}, ir::Dim{3, ""}})
                    .init("w", joule::testing::iota_tensor({3, 4}))
                    .node("MatMul", {"x", "w"}, {"y"})
                    .output("y")
                    .build();
  auto p = (dir() / "sym.onnx").string();
  onnx::save_model(g, p);
  Result before = joule_cmd("info --format json " + p);
  ASSERT_EQ(before.code, 0) << before.out;
  EXPECT_EQ(nlohmann::json::parse(before.out)["total"]["nodes_without_shapes"].get<int>(), 1);
  Result after = joule_cmd("info --format json --input-shape x=5,3 " + p);
  ASSERT_EQ(after.code, 0) << after.out;
  auto j = nlohmann::json::parse(after.out);
  EXPECT_DOUBLE_EQ(j["total"]["macs"].get<double>(), 5.0 * 3 * 4);
  EXPECT_EQ(j["outputs"][0]["shape"].get<std::string>(), "[5,4]");
  Result bad = joule_cmd("info --input-shape 5,3,2 " + p);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("rank 2"), std::string::npos) << bad.out;
}

TEST(Cli, PlanAndAlgorithmChoices) {
  // The bundled CNN: info --plan names an algorithm per node; forcing one is honoured; bad
  // --algo values and refusals are one-line errors with exit code 2.
  Result r = joule_cmd("info default --plan --threads 1 --algo conv=onednn");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("onednn"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("activation memory: arena"), std::string::npos) << r.out;
  Result j = joule_cmd("info default --plan --threads 1 --format json --algo reference");
  ASSERT_EQ(j.code, 0) << j.out;
  const auto plan = nlohmann::json::parse(j.out)["plan"];
  EXPECT_EQ(plan["algorithms"].size(), 1u);
  EXPECT_EQ(plan["algorithms"].begin().key(), "reference");
  auto expect_bad = [](const std::string& args, const std::string& needle) {
    Result b = joule_cmd(args);
    EXPECT_EQ(b.code, 2) << args << "\n" << b.out;
    EXPECT_EQ(lines(b.out), 1) << args << "\n" << b.out;
    EXPECT_NE(b.out.find(needle), std::string::npos) << args << "\n" << b.out;
  };
  expect_bad("run default --algo conv=nosuch", "unknown algorithm 'nosuch'");
  expect_bad("bench default --algo fastest", "expected guess, auto, reference");
  expect_bad("info default --plan --algo nosuchnode=onednn", "neither an op class");
  expect_bad("run default --algo-file /no/such.yaml", "cannot read the algorithm file");
  expect_bad("info default --plan --algo /features/features.7/Flatten=onednn", "has no algorithm 'onednn'");
  expect_bad("info default --plan --algo /features/features.1/MaxPool=onednn", "has no algorithm 'onednn'");
}

TEST(Cli, PrecisionBf16RunsOrSaysWhyNot) {
  const std::string input = std::string(JOULE_SOURCE_DIR) + "/models/fashion_cnn_input.npy";
  if (joule::bf16_unsupported_reason().empty()) {
    Result r = joule_cmd("run default -i " + input + " --threads 1 --precision bf16");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("precision bf16: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("on the given check input"), std::string::npos) << r.out;
    Result j = joule_cmd("bench default --runs 2 --warmup 0 --threads 1 --precision bf16 --format json");
    ASSERT_EQ(j.code, 0) << j.out;
    const auto p = nlohmann::json::parse(j.out)["precision"];
    EXPECT_EQ(p["precision"], "bf16");
    EXPECT_GE(p["bf16_layers"].get<int>(), 1) << p.dump();
    Result plan = joule_cmd("info default --plan --threads 1 --precision bf16 --bf16-min-sqnr 0");
    ASSERT_EQ(plan.code, 0) << plan.out;
    EXPECT_NE(plan.out.find("onednn_bf16"), std::string::npos) << plan.out;
    // joule compare's bf16 row: the same model at --precision bf16, close to fp32, not equal to it.
    const std::string src = JOULE_SOURCE_DIR;
    Result c = joule_cmd("compare default --configs " + src + "/examples/quant/w8a8.yaml --calib " + src +
                         "/models/fashion_cnn_sample.npy --bf16 --runs 2 --warmup 0 --threads 1 --format json");
    ASSERT_EQ(c.code, 0) << c.out;
    const auto rows = nlohmann::json::parse(c.out)["rows"];
    ASSERT_EQ(rows.size(), 3u) << c.out;
    EXPECT_EQ(rows[1]["model"], "bf16");
    EXPECT_GT(rows[1]["output_sqnr_db"].get<double>(), 30);
    EXPECT_LT(rows[1]["output_sqnr_db"].get<double>(), 90);
    EXPECT_LT(rows[1]["weight_bytes"].get<double>(), rows[0]["weight_bytes"].get<double>());
  }
  // A CPU without bfloat16 products (JOULE_ISA caps what joule detects): one line, exit 2.
  ::setenv("JOULE_ISA", "avx2", 1);
  Result no = joule_cmd("run default -i " + input + " --precision bf16");
  ::unsetenv("JOULE_ISA");
  EXPECT_EQ(no.code, 2) << no.out;
  EXPECT_EQ(lines(no.out), 1) << no.out;
  EXPECT_NE(no.out.find("needs AVX512-BF16 or AMX-BF16"), std::string::npos) << no.out;
  Result bad = joule_cmd("bench default --precision fp8");
  EXPECT_EQ(bad.code, 2) << bad.out;
}

TEST(Cli, PruneWritesASmallerModelThatRuns) {
  const std::string out = (dir() / "pruned.onnx").string();
  Result r = joule_cmd("prune default --ratio 0.5 --structured --format json -o " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_LT(j["params_after"].get<double>(), 0.6 * j["params_before"].get<double>());
  EXPECT_LT(j["flops_after"].get<double>(), 0.6 * j["flops_before"].get<double>());
  Result b = joule_cmd("bench " + out + " --runs 2 --warmup 0 --threads 1");
  EXPECT_EQ(b.code, 0) << b.out;
  Result bad = joule_cmd("prune default --ratio 1.5 -o " + (dir() / "bad.onnx").string());
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("ratio 1.5 must be in [0, 1)"), std::string::npos) << bad.out;
  EXPECT_FALSE(fs::exists(dir() / "bad.onnx"));
}

TEST(Cli, PruneThenFineTuneKeepsThePreprocessing) {
  const std::string samples = std::string(JOULE_SOURCE_DIR) + "/models/fashion_cnn_sample.npy";
  const std::string out = (dir() / "pruned_ft.onnx").string();
  Result r = joule_cmd("prune default --ratio 0.3 --structured --format json -o " + out + " --finetune-data " + samples +
                       " --finetune-epochs 1 --finetune-batch 8 --finetune-threads 1");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("finetune"));
  EXPECT_EQ(j["finetune"]["epochs"].size(), 1u);
  EXPECT_TRUE(fs::exists(dir() / "pruned_ft.json"));  // the bundled model's normalisation, beside it
  Result e = joule_cmd("eval " + out + " --data " + samples);
  EXPECT_EQ(e.code, 0) << e.out;
  EXPECT_NE(e.out.find("(pruned_ft.json)"), std::string::npos) << e.out;  // the normalisation read from the copy
  // Unstructured: fine-tuned with the pruned weights kept zero.
  Result u = joule_cmd("prune default --ratio 0.3 --format json -o " + (dir() / "u.onnx").string() + " --finetune-data " +
                       samples + " --finetune-batch 8 --finetune-threads 1");
  ASSERT_EQ(u.code, 0) << u.out;
  const auto uj = nlohmann::json::parse(u.out);
  EXPECT_GE(uj["finetune"]["masked_values"].get<int64_t>(),
            uj["nonzero_before"].get<int64_t>() - uj["nonzero_after"].get<int64_t>());
  Result bad = joule_cmd("prune default --ratio 0.3 -o " + (dir() / "u2.onnx").string() + " --finetune-data " + samples);
  EXPECT_EQ(bad.code, 2);  // 16 samples make no batch of 32
  EXPECT_EQ(std::count(bad.out.begin(), bad.out.end(), '\n'), 1) << bad.out;
}

TEST(Cli, CheckNumericsNamesTheFirstNodeWithNaNOrInf) {
  Tensor x = joule::testing::iota_tensor({2, 3});
  save_npy(x, (dir() / "finite.npy").string());
  x.data<float>()[4] = std::numeric_limits<float>::quiet_NaN();
  save_npy(x, (dir() / "nan.npy").string());
  const Result ok = joule_cmd("run " + model_path() + " -i " + (dir() / "finite.npy").string() + " --check-numerics");
  ASSERT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("numerics: every node's output is finite"), std::string::npos) << ok.out;
  // The NaN goes through MatMul (its row) and stays NaN through Relu: MatMul is named first.
  for (const char* algo : {"reference", "guess"}) {
    const Result bad = joule_cmd("run " + model_path() + " -i " + (dir() / "nan.npy").string() + " --check-numerics --passes none --algo " +
                                 algo + " --format json");
    ASSERT_EQ(bad.code, 0) << bad.out;
    const auto j = nlohmann::json::parse(bad.out);
    const auto& first = j["numerics"]["first_nonfinite"];
    ASSERT_TRUE(first.is_object()) << bad.out;
    EXPECT_EQ(first["op"], "MatMul") << algo;
    EXPECT_EQ(first["nan"].get<int64_t>(), 4) << algo;  // row 1 of the [2,4] product
    EXPECT_EQ(first["inf"].get<int64_t>(), 0) << algo;
    EXPECT_EQ(j["numerics"]["nodes_checked"].get<int64_t>(), 2) << algo;
  }
  // bench and profile check in one run of their own, outside the timed runs.
  const std::string nan = (dir() / "nan.npy").string();
  const Result bench = joule_cmd("bench " + model_path() + " -i " + nan + " --check-numerics --runs 2 --warmup 0 --passes none --format json");
  ASSERT_EQ(bench.code, 0) << bench.out;
  EXPECT_EQ(nlohmann::json::parse(bench.out)["numerics"]["first_nonfinite"]["op"], "MatMul") << bench.out;
  const Result prof = joule_cmd("profile " + model_path() + " -i " + nan + " --check-numerics --runs 2 --warmup 0 --passes none");
  ASSERT_EQ(prof.code, 0) << prof.out;
  EXPECT_NE(prof.out.find("MatMul"), std::string::npos) << prof.out;
  EXPECT_NE(prof.out.find("numerics:"), std::string::npos) << prof.out;
}
