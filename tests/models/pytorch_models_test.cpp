// Real architectures exported from PyTorch (tools/export_models.py, seeded random weights,
// BatchNorm with non-trivial statistics) run on joule and compared with PyTorch's outputs.
// `make test` exports them into JOULE_MODEL_DIR; without that variable the tests skip.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "joule/api/agreement.h"
#include "joule/core/cpu_features.h"
#include "joule/api/quantize.h"
#include "joule/core/npy.h"
#include "joule/onnx/model_io.h"
#include "joule/runtime/session.h"

using namespace joule;
namespace fs = std::filesystem;

namespace {

struct Diff {
  double max_abs = 0, ref_scale = 0;
  int64_t argmax_got = -1, argmax_ref = -1;
  double rel() const { return max_abs / std::max(ref_scale, 1e-30); }
};

Diff compare(const Tensor& got, const Tensor& ref) {
  Diff d;
  double best_g = -1e300, best_r = -1e300;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    double g = got.value_as_double(i), r = ref.value_as_double(i);
    d.max_abs = std::max(d.max_abs, std::fabs(g - r));
    d.ref_scale = std::max(d.ref_scale, std::fabs(r));
    if (g > best_g) best_g = g, d.argmax_got = i;
    if (r > best_r) best_r = r, d.argmax_ref = i;
  }
  return d;
}

class PyTorchModel : public ::testing::TestWithParam<std::string> {};
// LSTM, GRU and RNN classifiers (batch 3): compared with PyTorch only (no W8A8 check: their
// recurrent layers stay float).
class PyTorchSequenceModel : public ::testing::TestWithParam<std::string> {};

// Max relative error = max |joule - torch| / max |torch| over the output (<= 1e-4), same top-1.
void expect_matches_pytorch(const std::string& name) {
  const char* root = std::getenv("JOULE_MODEL_DIR");
  if (!root) GTEST_SKIP() << "JOULE_MODEL_DIR not set (make test exports the models)";
  fs::path dir = fs::path(root) / name;
  ASSERT_TRUE(fs::exists(dir / "model.onnx")) << dir << " missing: run `make fixtures`";
  runtime::Session s(onnx::load_model((dir / "model.onnx").string()));
  // joule's own shape inference gives every value of these static-input models a static shape.
  for (size_t i = 0; i < s.num_steps(); ++i)
    for (auto& o : s.step_node(i).outputs) {
      const ir::TensorType* t = s.graph().type_of(o);
      EXPECT_TRUE(o.empty() || (t && t->is_static())) << s.step_node(i).where() << " output " << o;
    }
  Tensor x = load_npy((dir / "input.npy").string());
  Tensor ref = load_npy((dir / "output.npy").string());
  auto t0 = std::chrono::steady_clock::now();
  auto out = s.run({{s.input_names()[0], x}});
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const Tensor& y = out.at(s.output_names()[0]);
  ASSERT_EQ(y.shape(), ref.shape());
  Diff d = compare(y, ref);
  std::printf("%-20s max abs err %.3g, max rel err %.3g, top-1 %lld/%lld, %.0f ms on %d threads\n",
              name.c_str(), d.max_abs, d.rel(), static_cast<long long>(d.argmax_got),
              static_cast<long long>(d.argmax_ref), ms, s.threads());
  EXPECT_LE(d.rel(), 1e-4);
  EXPECT_EQ(d.argmax_got, d.argmax_ref);
}

}  // namespace

TEST_P(PyTorchModel, MatchesPyTorch) { expect_matches_pytorch(GetParam()); }
TEST_P(PyTorchSequenceModel, MatchesPyTorch) { expect_matches_pytorch(GetParam()); }

// W8A8 (int8 per-channel weights, uint8 per-tensor activations) calibrated on the model's input:
// the simulation (--int8 simulated) computes what the integer plan (--int8 real) computes, code
// for code, on every quantized tensor (api/agreement.h), and the outputs are identical. Without
// VNNI the weights are 7-bit (what oneDNN's int8 kernels compute exactly there), so the integer
// plan runs on integer kernels on every CPU.
TEST_P(PyTorchModel, Int8SimulationIsTheIntegerPlan) {
  const char* root = std::getenv("JOULE_MODEL_DIR");
  if (!root) GTEST_SKIP() << "JOULE_MODEL_DIR not set (make test exports the models)";
  fs::path dir = fs::path(root) / GetParam();
  const api::Model m = api::Model::load((dir / "model.onnx").string());
  api::QuantOptions q;
  q.config =
      "default:\n"
      "  weight: {format: int, bits: " + std::string(int8_inexact_reason().empty() ? "8" : "7") +
      ", symmetric: true, granularity: per_channel, calibrator: minmax}\n"
      "  input: {format: int, bits: 8, symmetric: false, granularity: per_tensor, calibrator: minmax}\n";
  q.calib = api::DataSource::from_spec((dir / "input.npy").string());
  const api::Model qm = api::quantize(m, q).model;
  const Tensor x = load_npy((dir / "input.npy").string());
  const api::AgreementReport r = api::simulation_agreement(qm, {{m.input_names()[0], x}}, 1);
  size_t codes = 0;
  for (const api::TensorAgreement& t : r.tensors) codes += t.codes();
  std::printf("%-20s %zu integer nodes, %zu quantized tensors compared, first difference '%s', within one step %.6f\n",
              GetParam().c_str(), r.integer_nodes, codes, r.first_difference.c_str(), r.min_within_one);
  EXPECT_GT(r.integer_nodes, 0u);
  EXPECT_GT(codes, 0u);
  EXPECT_EQ(r.first_difference, "");
  EXPECT_EQ(r.min_within_one, 1.0);
  ASSERT_FALSE(r.outputs.empty());
  // Identical outputs; on AMX, oneDNN's int8 matmul (the classifier) rounds its float output in
  // another order (Int8Kernels.QMatMulOnednnAndEmulatedMatchReference): last bits only.
  if (cpu_features().amx_bf16 && !std::isinf(r.output_sqnr_db)) {
    EXPECT_GT(r.output_sqnr_db, 120) << r.output_sqnr_db << " dB";
  } else {
    EXPECT_TRUE(std::isinf(r.output_sqnr_db)) << r.output_sqnr_db << " dB";
  }
}

INSTANTIATE_TEST_SUITE_P(Torchvision, PyTorchModel,
                         ::testing::Values("resnet18", "mobilenet_v2", "mobilenet_v3_small", "vit_small",
                                           "transformer_encoder"));
INSTANTIATE_TEST_SUITE_P(Recurrent, PyTorchSequenceModel, ::testing::Values("lstm_bi2", "gru2", "rnn_bi"));
