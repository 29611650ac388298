// The library API (api/): hooks (progress, cancellation), data from arrays, models shared
// read-only, and tensors over a caller's unaligned memory on every kernel algorithm.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "graph_builder.h"
#include "joule/api/evaluate.h"
#include "joule/api/profile.h"
#include "joule/api/quantize.h"
#include "joule/api/run.h"
#include "joule/core/file_util.h"
#include "joule/core/npy.h"
#include "joule/profile/profiler.h"
#include "test_tensors.h"

namespace fs = std::filesystem;
using joule::DType;
using joule::Error;
using joule::Tensor;
using joule::testing::GraphBuilder;
using joule::testing::random_tensor;
namespace api = joule::api;

namespace {

const std::string kModels = std::string(JOULE_SOURCE_DIR) + "/models";

// The same values at an address 4 bytes past a 64-byte boundary, wrapped without a copy.
Tensor unaligned_copy(const Tensor& t) {
  auto buf = std::shared_ptr<std::byte[]>(new std::byte[t.nbytes() + 64]);
  std::byte* p = buf.get() + (64 - reinterpret_cast<uintptr_t>(buf.get()) % 64) % 64 + 4;
  std::memcpy(p, t.raw(), t.nbytes());
  return Tensor::wrap(t.dtype(), t.shape(), std::shared_ptr<std::byte[]>(buf, p));
}

void expect_same(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-6f * (1 + std::abs(a.data<float>()[i]))) << what << " @" << i;
}

// Runs `g` with every algorithm of `algos` that accepts its nodes, on `x` aligned and unaligned.
void check_unaligned(const joule::ir::Graph& g, const Tensor& x, const std::vector<std::string>& algos) {
  const Tensor ux = unaligned_copy(x);
  ASSERT_NE(reinterpret_cast<uintptr_t>(ux.raw()) % 64, 0u);
  int ran = 0;
  for (const std::string& algo : algos) {
    api::PrepareOptions o = api::PrepareOptions::with_threads(1);
    o.algo.rules = {algo};
    api::Prepared p;
    try {
      p = api::prepare(api::Model(g), o);
    } catch (const Error& e) {
      std::printf("%s refused: %s\n", algo.c_str(), e.what());
      continue;  // this CPU or shape is refused by the algorithm (with its reason)
    }
    ++ran;
    const Tensor a = p.session->run({{"x", x}}).at("y");
    const Tensor b = p.session->run({{"x", ux}}).at("y");
    expect_same(a, b, algo);
  }
  EXPECT_GE(ran, 2);
}

}  // namespace

TEST(Api, UnalignedInputsMatchAlignedOnEveryAlgorithm) {
  GraphBuilder conv;
  conv.input("x", DType::Float32, {1, 16, 20, 20})
      .init("w", random_tensor({16, 16, 3, 3}, 1))
      .init("b", random_tensor({16}, 2))
      .node("Conv", {"x", "w", "b"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Relu", {"c"}, {"y"})
      .output("y");
  check_unaligned(conv.build(), random_tensor({1, 16, 20, 20}, 3),
                  {"reference", "conv=direct", "conv=im2col_gemm", "conv=implicit_gemm", "conv=winograd",
                   "conv=winograd_f2", "conv=fft", "conv=onednn"});
  GraphBuilder mm;
  mm.input("x", DType::Float32, {8, 64}).init("w", random_tensor({64, 32}, 4)).node("MatMul", {"x", "w"}, {"y"}).output("y");
  check_unaligned(mm.build(), random_tensor({8, 64}, 5),
                  {"reference", "matmul=onednn", "matmul=onednn_packed", "matmul=blas"});
}

TEST(Api, ProgressIsReportedAndCancellationStopsBench) {
  const api::Model m = api::Model::load("default");
  api::BenchOptions o;
  o.prepare.threads = 1;
  o.warmup = 2;
  o.runs = 1000;
  std::vector<size_t> done;
  api::Hooks h;
  h.progress = [&](const api::Progress& p) { done.push_back(p.done); };
  h.cancelled = [&] { return done.size() >= 5; };
  try {
    api::bench(m, o, h);
    FAIL() << "not cancelled";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Cancelled);
  }
  EXPECT_EQ(done, (std::vector<size_t>{1, 2, 3, 4, 5}));
}

TEST(Api, CancelledSweepKeepsTheFinishedPoints) {
  const fs::path dir = fs::temp_directory_path() / ("joule_api_sweep_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const api::Model m = api::Model::load("default");
  api::ProfileOptions o;
  o.threads = {1};
  o.runs = 2;
  o.warmup = 0;
  o.batches = {1, 2, 3};
  o.passes = "none";
  o.out_dir = dir.string();
  api::Hooks h;
  bool stop = false;
  h.progress = [&](const api::Progress& p) { stop = p.done >= 1; };
  h.cancelled = [&] { return stop; };
  EXPECT_THROW(api::profile(m, o, h), Error);
  const auto rows = joule::profile::parse_csv(joule::read_file((dir / (m.name() + "_overall.csv")).string()));
  EXPECT_EQ(rows.size(), 2u);  // the header and the one point measured
  const api::ProfileReport again = api::profile(m, o);
  EXPECT_EQ(again.skipped.size(), 1u);
  EXPECT_EQ(again.points.size(), 2u);
  fs::remove_all(dir);
}

TEST(Api, EvaluateOnArraysEqualsTheFile) {
  const api::Model m = api::Model::load("default");
  api::EvalOptions o;
  o.data = api::DataSource::from_spec(kModels + "/fashion_cnn_sample.npy");
  const api::EvalReport file = api::evaluate(m, o);
  o.data = api::DataSource::from_arrays(joule::load_npy(kModels + "/fashion_cnn_sample.npy"),
                                        joule::load_npy(kModels + "/fashion_cnn_sample_labels.npy"));
  const api::EvalReport arrays = api::evaluate(m, o);
  EXPECT_EQ(file.result.samples, 16u);
  EXPECT_EQ(arrays.result.samples, file.result.samples);
  EXPECT_EQ(arrays.result.top1, file.result.top1);
  EXPECT_EQ(arrays.result.top5, file.result.top5);
  // Images without labels: a one-line error, not a crash.
  o.data = api::DataSource::from_arrays(joule::load_npy(kModels + "/fashion_cnn_sample.npy"));
  EXPECT_THROW(api::evaluate(m, o), Error);
}

TEST(Api, WorkflowsLeaveTheirModelAsItWas) {
  const api::Model m = api::Model::load("default");
  const std::string before = m.to_bytes();
  api::prepare(m, api::PrepareOptions::with_threads(1));
  api::QuantOptions q;
  q.config = std::string(JOULE_SOURCE_DIR) + "/examples/quant/w8a8.yaml";
  q.calib = api::DataSource::from_spec(kModels + "/fashion_cnn_sample.npy");
  const api::QuantizeResult r = api::quantize(m, q);
  EXPECT_EQ(m.to_bytes(), before);
  EXPECT_GT(r.model.graph().nodes.size(), m.graph().nodes.size());
  EXPECT_EQ(r.model.name(), "fashion_cnn_w8a8");
  EXPECT_EQ(r.model.sidecar(), m.sidecar());  // its data is preprocessed as the original's
}

TEST(Api, InputShapesAreCheckedAgainstTheModel) {
  const api::Model m = api::Model::load("default");
  EXPECT_EQ(m.with_input_shapes({{"", {4, 1, 28, 28}}}).graph().type_of("input")->str(), "float32[4,1,28,28]");
  try {
    m.with_input_shapes({{"nope", {1}}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'nope' is not an input"), std::string::npos) << e.what();
  }
  EXPECT_THROW(m.with_input_shapes({{"input", {1, 28, 28}}}), Error);
  EXPECT_THROW(api::parse_input_shape("x=1,a,3"), Error);
  EXPECT_EQ(api::parse_input_shape("x=1,3").second, (joule::Shape{1, 3}));
}

// A dynamic-batch export run on a batch: the symbolic dims come from the inputs, so the plan has
// static shapes and fast kernels; declared static shapes are still checked, not overridden.
TEST(Api, SymbolicInputDimsAreResolvedFromTheInputs) {
  GraphBuilder b;
  b.input_sym("x", DType::Float32, {joule::ir::Dim{-1, "batch"}, joule::ir::Dim{3, ""}, joule::ir::Dim{8, ""}})
      .node("Sigmoid", {"x"}, {"y"}, {}, "act")
      .output("y");
  const api::Model m(b.build());
  const Tensor x = random_tensor({5, 3, 8}, 1);
  const api::Model r = m.resolved_for({{"x", x}});
  EXPECT_EQ(r.graph().type_of("x")->str(), "float32[5,3,8]");
  api::Prepared p = api::prepare(r, api::PrepareOptions::with_threads(1));
  EXPECT_EQ(api::plan_json(*p.session)["steps"][0]["algorithm"], "simd") << api::plan_json(*p.session).dump();
  api::RunOptions o;
  o.inputs = {{"x", x}};
  EXPECT_EQ(api::run(m, o).outputs.at("y").shape(), (joule::Shape{5, 3, 8}));
  // static declarations are left to the session's checks
  const api::Model fixed = m.with_input_shapes({{"x", {2, 3, 8}}});
  EXPECT_EQ(fixed.resolved_for({{"x", x}}).graph().type_of("x")->str(), "float32[2,3,8]");
  EXPECT_THROW(api::run(fixed, o), Error);
}

// A model input without a batch axis (torchvision's detectors take one [3, H, W] image): data
// whose samples have the input's whole shape feed it as they are; a batched model of the same
// image shape gets them with a batch axis of 1.
TEST(Api, DataFeedsModelsWithoutABatchAxis) {
  const Tensor images = random_tensor({2, 3, 4, 4}, 5, 0, 1);
  for (bool batch_axis : {false, true}) {
    GraphBuilder b;
    const joule::Shape in = batch_axis ? joule::Shape{1, 3, 4, 4} : joule::Shape{3, 4, 4};
    b.input("image", DType::Float32, in).node("Relu", {"image"}, {"y"}).output("y");
    const api::Model m(b.build(), "", "m");
    auto d = api::open_data(api::DataSource::from_arrays(images), m, api::DataOptions{});
    EXPECT_EQ(d->batched(), batch_axis);
    const api::LoadedSamples s = api::load_samples(*d, "image", 0);
    ASSERT_EQ(s.inputs.size(), 2u);
    EXPECT_EQ(s.inputs[1].at("image").shape(), in);
    EXPECT_EQ(s.inputs[1].at("image").data<float>()[5], images.data<float>()[48 + 5]);
  }
}

// A model whose batch is fixed above 1 (exported without a dynamic batch): the data stacks that
// many samples per run, the last partial stack dropped; joule eval scores each output row
// against its own label; per-sample analyses refuse it with the reason.
TEST(Api, DataStacksSamplesForAModelWhoseBatchIsFixed) {
  const Tensor images = random_tensor({7, 4}, 6, -1, 1);
  Tensor labels(DType::Int64, {7});
  for (int64_t i = 0; i < 7; ++i) {  // the label of each sample: the index of its largest value
    const float* row = images.data<float>() + i * 4;
    labels.data<int64_t>()[i] = std::max_element(row, row + 4) - row;
  }
  labels.data<int64_t>()[4] = (labels.data<int64_t>()[4] + 1) % 4;  // one wrong label
  GraphBuilder b;
  b.input("x", DType::Float32, {3, 4}).node("Relu", {"x"}, {"y"}).output("y");
  const api::Model m(b.build(), "", "fixed3");
  auto d = api::open_data(api::DataSource::from_arrays(images, labels), m, api::DataOptions{});
  EXPECT_EQ(d->size(), 2u);
  EXPECT_FALSE(d->batched());
  EXPECT_NE(d->describe().find("stacked 3 per run"), std::string::npos) << d->describe();
  EXPECT_NE(d->describe().find("last 1 samples dropped"), std::string::npos) << d->describe();
  const joule::data::Sample s = d->get(1);
  EXPECT_EQ(s.input.shape(), (joule::Shape{3, 4}));
  EXPECT_EQ(s.input.data<float>()[4], images.data<float>()[16]);
  EXPECT_EQ(s.labels.size(), 3u);
  api::EvalOptions eo;
  eo.data = api::DataSource::from_arrays(images, labels);
  const api::EvalReport r = api::evaluate(m, eo);
  EXPECT_EQ(r.result.samples, 6u);
  EXPECT_EQ(r.result.top1, 5u);  // the relu keeps the largest positive value first; sample 4's label is wrong
  EXPECT_THROW(api::load_samples(*d, "x", 0), Error);
  EXPECT_EQ(api::load_samples(*d, "x", 0, false).inputs.size(), 2u);
}
