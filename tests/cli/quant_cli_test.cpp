// joule quantize / sensitivity / eval as a user runs them on the bundled Fashion-MNIST model and
// its bundled 16 labelled samples: outputs, files, and one-line errors with exit code 2.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "joule/core/cpu_features.h"
#include "joule/core/file_util.h"
#include "joule/core/npy.h"
#include "joule/onnx/model_io.h"

namespace fs = std::filesystem;
using joule::testing::CliResult;

namespace {
CliResult joule_cmd(const std::string& args) { return joule::testing::run_joule(args); }

fs::path dir() {
  static fs::path d = joule::testing::scratch_dir("quant_cli");
  return d;
}

const std::string kSamples = std::string(JOULE_SOURCE_DIR) + "/models/fashion_cnn_sample.npy";
const std::string kW8A8 = std::string(JOULE_SOURCE_DIR) + "/examples/quant/w8a8.yaml";

std::string config(const std::string& name, const std::string& text) {
  const fs::path p = dir() / name;
  joule::write_file_atomic(p.string(), text);
  return p.string();
}

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }
}  // namespace

TEST(QuantCli, EvalOnBundledSamples) {
  CliResult r = joule_cmd("eval default --data " + kSamples + " --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["samples"].get<int>(), 16);
  EXPECT_DOUBLE_EQ(j["top1"].get<double>(), 1.0);  // models/fashion_cnn.json: 16 of 16 correct in PyTorch
  EXPECT_DOUBLE_EQ(j["top5"].get<double>(), 1.0);
}

TEST(QuantCli, DryRunPrintsResolvedChoicesWithoutCalibrating) {
  CliResult r = joule_cmd("quantize default --config " + kW8A8 + " --dry-run");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("entropy"), std::string::npos);  // the Gemm rule
  EXPECT_NE(r.out.find("6 nodes quantized"), std::string::npos) << r.out;  // 5 convs + the classifier
}

TEST(QuantCli, QuantizeWritesLoadableQdqModelAndAccuracyTable) {
  const std::string out = (dir() / "q.onnx").string();
  CliResult r = joule_cmd("quantize default --config " + kW8A8 + " --calib " + kSamples + " --eval " + kSamples +
                          " -o " + out + " --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["calibration_samples"].get<int>(), 16);
  EXPECT_EQ(j["fake_quant_nodes"].get<int>(), 0);
  EXPECT_GE(j["eval"]["quantized"]["top1"].get<double>(), 0.8);
  // 8-bit weights run emulated where the CPU has no VNNI: the report says so and names the fix.
  if (joule::int8_inexact_reason().empty()) EXPECT_FALSE(j.contains("note")) << r.out;
  else EXPECT_NE(j["note"].get<std::string>().find("w7a8.yaml"), std::string::npos) << r.out;
  joule::ir::Graph g = joule::onnx::load_model(out);
  int q = 0, dq = 0;
  for (auto& n : g.nodes) {
    q += n->op_type == "QuantizeLinear";
    dq += n->op_type == "DequantizeLinear";
  }
  EXPECT_EQ(q, 6);
  EXPECT_EQ(dq, 12);
  // The written model runs in joule.
  CliResult e = joule_cmd("eval " + out + " --data " + kSamples + " --format json");
  ASSERT_EQ(e.code, 0) << e.out;
  EXPECT_EQ(nlohmann::json::parse(e.out)["samples"].get<int>(), 16);
  // Its simulated and integer plans agree code for code on the 16 samples.
  CliResult a = joule_cmd("compare " + out + " --agreement -i " + kSamples + " --format json");
  ASSERT_EQ(a.code, 0) << a.out;
  auto aj = nlohmann::json::parse(a.out);
  // Integer kernels where the CPU has VNNI (without, oneDNN's would saturate: the note says so).
  if (joule::int8_inexact_reason().empty()) EXPECT_GE(aj["integer_nodes"].get<int>(), 3);
  else EXPECT_NE(aj["note"].get<std::string>().find("no VNNI"), std::string::npos) << a.out;
  EXPECT_EQ(aj["first_difference"], "");
  EXPECT_EQ(aj["min_within_one_step"].get<double>(), 1.0);
  EXPECT_GE(aj["tensors"].size(), 6u);
  CliResult t = joule_cmd("compare " + out + " --agreement");
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("first difference: none"), std::string::npos) << t.out;
  // A float model has nothing to compare: one line, exit 2.
  CliResult f = joule_cmd("compare default --agreement");
  EXPECT_EQ(f.code, 2) << f.out;
  EXPECT_NE(f.out.find("not a quantized (QDQ) model"), std::string::npos) << f.out;
}

// 7-bit weights: integer kernels on every CPU (oneDNN's, or joule's avx2_int8 without VNNI), no
// note, and the simulation equal to them.
TEST(QuantCli, SevenBitWeightsRunOnIntegerKernelsEverywhere) {
  const std::string cfg = std::string(JOULE_SOURCE_DIR) + "/examples/quant/w7a8.yaml";
  const std::string out = (dir() / "w7.onnx").string();
  CliResult r = joule_cmd("quantize default --config " + cfg + " --calib " + kSamples + " -o " + out + " --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(nlohmann::json::parse(r.out).contains("note")) << r.out;
  joule::ir::Graph g = joule::onnx::load_model(out);
  for (auto& [name, t] : g.initializers) {
    if (t.dtype() != joule::DType::Int8) continue;
    for (int64_t i = 0; i < t.numel(); ++i) ASSERT_GE(t.data<int8_t>()[i], -64) << name;
  }
  CliResult a = joule_cmd("compare " + out + " --agreement -i " + kSamples + " --format json");
  ASSERT_EQ(a.code, 0) << a.out;
  auto aj = nlohmann::json::parse(a.out);
  EXPECT_GE(aj["integer_nodes"].get<int>(), 5) << a.out;
  EXPECT_EQ(aj["first_difference"], "");
  EXPECT_EQ(aj["min_within_one_step"].get<double>(), 1.0);
}

TEST(QuantCli, NonOnnxFormatsAreRefusedForExportUnlessAsked) {
  // 4-bit activations: a QuantizeLinear cannot clamp a computed tensor to 4 bits.
  const std::string cfg = std::string(JOULE_SOURCE_DIR) + "/examples/quant/w4a4.yaml";
  const std::string out = (dir() / "w4.onnx").string();
  CliResult r = joule_cmd("quantize default --config " + cfg + " --calib " + kSamples + " -o " + out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("FakeQuant"), std::string::npos);
  EXPECT_FALSE(fs::exists(out));
  CliResult ok = joule_cmd("quantize default --config " + cfg + " --calib " + kSamples + " -o " + out +
                           " --allow-joule-ops");
  ASSERT_EQ(ok.code, 0) << ok.out;
  EXPECT_TRUE(fs::exists(out));
}

TEST(QuantCli, SensitivityWritesTableJsonCsvSvg) {
  const fs::path d = dir() / "sens";
  CliResult r = joule_cmd("sensitivity default --config " + kW8A8 + " --calib " + kSamples + " --eval " + kSamples +
                          " --samples 8 --mode isolated --top 5 -o " + d.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("SQNR"), std::string::npos);
  for (const char* f : {"sensitivity.json", "sensitivity.csv", "sensitivity.svg"}) EXPECT_TRUE(fs::exists(d / f)) << f;
  auto j = nlohmann::json::parse(joule::read_file((d / "sensitivity.json").string()));
  EXPECT_EQ(j["mode"], "isolated");
  EXPECT_EQ(j["layers"].size(), 6u);
  EXPECT_TRUE(j["layers"][0]["top1"].contains("all"));
}

TEST(QuantCli, BadInputIsOneLineExitTwo) {
  const std::string bad_format = config("bad_format.yaml", "default:\n  weight: {format: posit8}\n");
  const std::string bad_bits = config("bad_bits.yaml", "default:\n  weight: {format: int, bits: 17}\n");
  const std::string no_match =
      config("no_match.yaml", "default:\n  weight: {format: int8}\nrules:\n  - match: {regex: 'layer9'}\n    skip: true\n");
  const std::string wrong_data = (dir() / "wrong.npy").string();
  joule::save_npy(joule::Tensor(joule::DType::Float32, {2, 1, 3, 3}), wrong_data);  // 3x3 images, model wants 28x28
  const std::string out = (dir() / "never.onnx").string();
  for (const std::string& args :
       {"quantize default --config " + bad_format + " --calib " + kSamples + " -o " + out,
        "quantize default --config " + bad_bits + " --calib " + kSamples + " -o " + out,
        "quantize default --config " + no_match + " --calib " + kSamples + " -o " + out,
        "quantize default --config " + kW8A8 + " --calib " + wrong_data + " -o " + out,
        "quantize default --config " + kW8A8 + " --calib /nonexistent/data.npy -o " + out,
        "quantize default --config /nonexistent.yaml --calib " + kSamples + " -o " + out,
        "sensitivity default --config " + kW8A8 + " --calib " + kSamples + " --mode sideways",
        "eval default --data " + wrong_data}) {
    CliResult r = joule_cmd(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_EQ(lines(r.out), 1) << args << "\n" << r.out;
    EXPECT_FALSE(fs::exists(out)) << args;
  }
}

TEST(QuantCli, CompareTabulatesAccuracyLatencyEnergyAndSize) {
  const fs::path d = dir() / "compare";
  CliResult r = joule_cmd("compare default --configs " + kW8A8 + " --calib " + kSamples + " --eval " + kSamples +
                          " --runs 3 --energy estimate --format json -o " + d.string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["model"], "fp32");
  EXPECT_EQ(j["rows"][0]["integer_nodes"].get<int>(), 0);
  // 5 convs + the classifier on integer kernels (none without VNNI: the emulated kernels run)
  EXPECT_EQ(j["rows"][1]["integer_nodes"].get<int>(), joule::int8_inexact_reason().empty() ? 6 : 0);
  EXPECT_LT(j["rows"][1]["weight_bytes"].get<double>(), j["rows"][0]["weight_bytes"].get<double>() / 3);
  for (auto& row : j["rows"]) {
    EXPECT_EQ(row["eval"]["samples"].get<int>(), 16);
    EXPECT_GT(row["latency_ms"]["median"].get<double>(), 0);
    EXPECT_EQ(row["energy"]["source"].get<std::string>().rfind("estimate:", 0), 0u);  // the named model
  }
  EXPECT_TRUE(fs::exists(d / "compare.json"));
  EXPECT_TRUE(fs::exists(d / "compare.csv"));
  CliResult bad = joule_cmd("compare default --configs /nonexistent.yaml --calib " + kSamples);
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_EQ(lines(bad.out), 1) << bad.out;
}

TEST(QuantCli, EvalCheckNumericsOnFiniteData) {
  CliResult r = joule_cmd("eval default --data " + kSamples + " --limit 20 --check-numerics --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["numerics"]["first_nonfinite"].is_null()) << r.out;
  EXPECT_GT(j["numerics"]["nodes_checked"].get<int64_t>(), 20);  // every node of every sample
}

// Crash safety of calibration: `joule quantize --calib-cache` on 256 samples (the bundled 16,
// repeated), killed with SIGKILL at seeded random moments from 0.05 to 1.05 times an uninterrupted
// run's time, the cache removed before each run so that every run calibrates. After every kill
// the cache and the output are absent or whole (the cache parses with its ranges, the model
// loads); then a run to the end from the last cache writes the same model, byte for byte, as an
// uninterrupted run.
TEST(QuantCli, KilledCalibrationLeavesNoTornCacheOrModel) {
  const fs::path d = joule::testing::scratch_dir("quant_killed");
  const std::string cache = (d / "calib.json").string(), out = (d / "q.onnx").string(), clean = (d / "clean.onnx").string();
  const std::string samples = (d / "samples.npy").string();
  {
    const joule::Tensor s = joule::load_npy(kSamples);
    joule::Shape shape = s.shape();
    shape[0] *= 16;
    joule::Tensor big(s.dtype(), shape);
    for (int k = 0; k < 16; ++k)
      std::memcpy(static_cast<char*>(big.raw()) + k * s.nbytes(), s.raw(), s.nbytes());
    joule::save_npy(big, samples);
  }
  const std::string common = "quantize default --config " + kW8A8 + " --calib " + samples + " --calib-samples 256 ";
  // An uninterrupted run's time: the faster of two, so that a run slowed by other work on the
  // machine does not send the kills past the end of the later runs.
  double full_ms = 1e30;
  for (int k = 0; k < 2; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(joule_cmd(common + "-o " + clean).code, 0);
    full_ms = std::min(full_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const std::vector<std::string> args = {"quantize", "default", "--config", kW8A8, "--calib", samples, "--calib-samples", "256",
                                         "--calib-cache", cache, "-o", out};
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> share(0.05, 1.05);
  int killed = 0, with_cache = 0;
  for (int i = 0; i < 12; ++i) {
    fs::remove(cache);
    const int code = joule::testing::run_joule_killed_after(args, static_cast<int>(share(rng) * full_ms));
    if (code == -1) ++killed;
    else ASSERT_EQ(code, 0) << "run " << i;
    if (fs::exists(cache)) {
      ++with_cache;
      const auto j = nlohmann::json::parse(joule::read_file(cache), nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << "run " << i << ": a torn calibration cache";
      ASSERT_TRUE(j.contains("ranges") && !j["ranges"].empty()) << "run " << i;
    }
    if (fs::exists(out)) {
      EXPECT_NO_THROW(joule::onnx::load_model(out)) << "run " << i << ": a torn model";
    }
  }
  std::printf("%d of 12 runs killed (a run: %.0f ms); a cache after %d\n", killed, full_ms, with_cache);
  EXPECT_GE(killed, 4) << "the kills should land mid-run";
  std::string cmd;
  for (const std::string& a : args) cmd += a + " ";
  ASSERT_EQ(joule_cmd(cmd).code, 0);
  EXPECT_EQ(joule::read_file(out), joule::read_file(clean)) << "the resumed run wrote another model";
}
