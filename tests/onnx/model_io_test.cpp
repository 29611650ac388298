#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "graph_builder.h"
#include "joule/core/file_util.h"
#include "joule/onnx/model_io.h"
#include "joule/runtime/session.h"

using namespace joule;
using joule::testing::GraphBuilder;
namespace fs = std::filesystem;

namespace {
fs::path tmpdir() {
  auto d = fs::temp_directory_path() / ("joule_onnx_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

ir::Graph small_cnn() {
  Tensor w(DType::Float32, {4, 2, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = static_cast<float>((i * 37) % 11) / 11.f - 0.5f;
  return GraphBuilder()
      .input("x", DType::Float32, {1, 2, 6, 6})
      .init("w", w)
      .init("b", Tensor::from_vector<float>({0.1f, -0.2f, 0.3f, 0.0f}, {4}))
      .init("h", Tensor::from_vector<int64_t>({1, -1}, {2}))
      .node("Conv", {"x", "w", "b"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}})
      .node("Relu", {"c"}, {"r"})
      .node("Reshape", {"r", "h"}, {"y"})
      .output("y")
      .build();
}

Tensor run1(const ir::Graph& g, const Tensor& x) {
  runtime::Session s(g);
  return s.run({{s.input_names()[0], x}}).begin()->second;
}
}  // namespace

TEST(OnnxIO, ExportImportGivesIdenticalOutputs) {
  ir::Graph g = small_cnn();
  g.nodes[0]->attrs["dilations"] = std::vector<int64_t>{1, 1};
  g.nodes[0]->attrs["auto_pad"] = std::string("NOTSET");
  Tensor x = joule::testing::iota_tensor({1, 2, 6, 6}, -1.f, 0.03f);
  auto p = (tmpdir() / "cnn.onnx").string();
  onnx::save_model(g, p);
  ir::Graph g2 = onnx::load_model(p);
  EXPECT_EQ(g2.nodes.size(), g.nodes.size());
  EXPECT_EQ(g2.nodes[0]->attr_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(g2.nodes[0]->attr_string("auto_pad", ""), "NOTSET");
  EXPECT_EQ(g2.opset(), 17);
  Tensor a = run1(g, x), b = run1(g2, x);
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(0, std::memcmp(a.raw(), b.raw(), a.nbytes()));
  // Second round trip is byte-identical.
  onnx::save_model(g2, p + "2");
  EXPECT_EQ(onnx::serialize_model(onnx::load_model(p + "2")), onnx::serialize_model(g2));
}

// An If whose branches read a value of the outer graph (x) and a Loop summing it: written
// without the captured inputs, read back with them (the loader finds what the bodies read),
// and run with both branches taken.
TEST(OnnxIO, ControlFlowWithOuterScopeValuesRoundTrips) {
  GraphBuilder then_b, else_b, body_b;
  then_b.init("one", Tensor::scalar<float>(1.f)).node("Add", {"x", "one"}, {"t"}).output("t");
  then_b.g.types["t"] = ir::TensorType::of(DType::Float32, {3});
  else_b.node("Neg", {"x"}, {"e"}).output("e");
  else_b.g.types["e"] = ir::TensorType::of(DType::Float32, {3});
  body_b.input("i", DType::Int64, {}).input("c", DType::Bool, {}).input("acc", DType::Float32, {3})
      .node("Add", {"acc", "x"}, {"acc2"}).node("Identity", {"c"}, {"c2"}).output("c2").output("acc2");
  body_b.g.types["acc2"] = ir::TensorType::of(DType::Float32, {3});
  then_b.g.name = "then", else_b.g.name = "else", body_b.g.name = "body";
  GraphBuilder b;
  b.input("x", DType::Float32, {3})
      .input("cond", DType::Bool, {})
      .init("trips", Tensor::scalar<int64_t>(4))
      .init("zero", Tensor::from_vector<float>({0, 0, 0}, {3}))
      .node("If", {"cond", "x"}, {"y"},
            {{"then_branch", std::make_shared<const ir::Graph>(then_b.g)}, {"else_branch", std::make_shared<const ir::Graph>(else_b.g)}})
      .node("Loop", {"trips", "", "zero", "x"}, {"sum"}, {{"body", std::make_shared<const ir::Graph>(body_b.g)}})
      .output("y")
      .output("sum");
  b.g.nodes[0]->captured = {"x"};
  b.g.nodes[1]->captured = {"x"};
  const auto p = (tmpdir() / "control_flow.onnx").string();
  onnx::save_model(b.g, p);
  const ir::Graph g = onnx::load_model(p);
  ASSERT_EQ(g.nodes.size(), 2u);
  for (auto& n : g.nodes) {
    EXPECT_EQ(n->captured, std::vector<std::string>{"x"}) << n->where();
    EXPECT_EQ(n->inputs.back(), "x") << n->where();
  }
  EXPECT_EQ(g.nodes[0]->inputs.size(), 2u);  // cond + captured x
  runtime::Session s(g);
  const Tensor x = Tensor::from_vector<float>({1, -2, 3}, {3});
  for (bool c : {true, false}) {
    const auto out = s.run({{"x", x}, {"cond", Tensor::scalar<bool>(c)}});
    const Tensor& y = out.at("y");
    const Tensor& sum = out.at("sum");
    for (int i = 0; i < 3; ++i) {
      EXPECT_FLOAT_EQ(y.data<float>()[i], c ? x.data<float>()[i] + 1 : -x.data<float>()[i]);
      EXPECT_FLOAT_EQ(sum.data<float>()[i], 4 * x.data<float>()[i]);
    }
  }
}

TEST(OnnxIO, ExternalDataRoundTrip) {
  ir::Graph g = small_cnn();
  auto dir = tmpdir() / "ext";
  fs::create_directories(dir);
  auto p = (dir / "m.onnx").string();
  onnx::save_model(g, p, {64});
  ASSERT_TRUE(fs::exists(dir / "m.onnx.data"));
  EXPECT_LT(fs::file_size(p), 400u);  // the weights are not inside the model file
  ir::Graph g2 = onnx::load_model(p);
  const Tensor& w = g2.initializers.at("w");
  EXPECT_EQ(0, std::memcmp(w.raw(), g.initializers.at("w").raw(), w.nbytes()));
  // A missing data file is a clear error.
  fs::remove(dir / "m.onnx.data");
  try {
    onnx::load_model(p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("external data"), std::string::npos);
  }
}

TEST(OnnxIO, BadFilesAreOneLineErrors) {
  auto d = tmpdir();
  EXPECT_THROW(onnx::load_model((d / "missing.onnx").string()), Error);
  write_file_atomic((d / "empty.onnx").string(), "");
  EXPECT_THROW(onnx::load_model((d / "empty.onnx").string()), Error);
  write_file_atomic((d / "garbage.onnx").string(), std::string("\xff\xff\xff\xff garbage", 12));
  EXPECT_THROW(onnx::load_model((d / "garbage.onnx").string()), Error);
  std::string bytes = onnx::serialize_model(small_cnn());
  try {
    onnx::parse_model(bytes.substr(0, bytes.size() / 2), ".", "trunc.onnx");
    FAIL() << "truncated model loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::BadInput);
    EXPECT_NE(std::string(e.what()).find("trunc.onnx"), std::string::npos);
  }
  EXPECT_THROW(onnx::load_model(d.string()), Error);  // a directory
}

TEST(OnnxIO, TensorPbRoundTripAndConformanceData) {
  auto p = (tmpdir() / "t.pb").string();
  Tensor t = Tensor::from_vector<int64_t>({3, -4, 5}, {3});
  onnx::save_tensor_pb(t, "t", p);
  EXPECT_EQ(onnx::load_tensor_pb(p).to_int_vector(), (std::vector<int64_t>{3, -4, 5}));
  const char* conv = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding";
  if (!fs::exists(conv)) GTEST_SKIP() << "libonnx-testdata not installed";
  ir::Graph g = onnx::load_model(std::string(conv) + "/model.onnx");
  Tensor x = onnx::load_tensor_pb(std::string(conv) + "/test_data_set_0/input_0.pb");
  EXPECT_EQ(x.shape(), (Shape{1, 1, 7, 5}));
}
