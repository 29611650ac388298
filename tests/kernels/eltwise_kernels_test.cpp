// The simd algorithms of the unary, binary, pool, movement and normalisation op classes
// (kernels/eltwise/) against the ops' reference kernels: every op, random shapes (odd lengths that leave vector tails), values over
// the functions' interesting ranges with NaN, +-Inf and signed zeros mixed in, threads 1 and 2
// (tensors large enough to be split), and every broadcasting pattern of the binary ops.
#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>

#include "graph_builder.h"
#include "kernel_test_util.h"
#include "joule/ops/movement_util.h"

namespace joule {
namespace {

using testing::GraphBuilder;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Uniform in [-scale, scale], with every 17th element a special value.
Tensor values(const Shape& s, uint32_t seed, float scale) {
  Tensor t = testing::random_tensor(s, seed, -scale, scale);
  const float special[] = {kNaN, kInf, -kInf, 0.f, -0.f, 1e-30f, -1e-30f, 1e-42f};
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); i += 17) p[i] = special[(i / 17 + seed) % 8];
  return t;
}

// Same NaN positions, same infinities, elsewhere within `tol` relative to max(|want|, floor).
void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what, double floor = 1e-30) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  int bad = 0;
  for (int64_t i = 0; i < want.numel() && bad < 5; ++i) {
    const float g = got.data<float>()[i], w = want.data<float>()[i];
    const bool ok = std::isnan(w) ? std::isnan(g)
                    : std::isinf(w) ? g == w
                                    : std::abs(double(g) - double(w)) <= tol * std::max(std::abs(double(w)), floor);
    if (!ok) {
      ++bad;
      ADD_FAILURE() << what << ": element " << i << " got " << g << " want " << w;
    }
  }
}

struct UnaryCase {
  const char* op;
  const char* domain;
  float scale;  // input range
  double tol;
  std::map<std::string, ir::Attribute> attrs = {};
  double floor = 1e-30;  // see expect_close
};

TEST(EltwiseKernels, UnarySimdMatchesReference) {
  const std::vector<UnaryCase> cases = {
      {"Relu", "", 10, 0},
      {"LeakyRelu", "", 10, 1e-7, {{"alpha", 0.1f}}},
      {"Sigmoid", "", 30, 1e-6},
      {"SiLU", "joule", 30, 1e-6},
      {"Tanh", "", 12, 1e-6},
      // alpha x + beta cancels near 0: the AVX-512 build contracts it into an FMA (absolute error)
      {"HardSigmoid", "", 8, 1e-6, {{"alpha", 0.3f}, {"beta", 0.4f}}, 1.0},
      {"HardSwish", "", 8, 1e-6},
      {"HardSwish", "joule", 8, 1e-6},
      {"Elu", "", 20, 1e-6, {{"alpha", 0.7f}}},
      {"Selu", "", 20, 1e-6},
      {"Celu", "", 20, 1e-6, {{"alpha", 2.f}}},
      {"Softplus", "", 40, 1e-6},
      {"Softsign", "", 10, 1e-6},
      {"Mish", "", 20, 2e-6},
      {"Exp", "", 100, 1e-6},
      {"Log", "", 1e6, 1e-6},
      {"Erf", "", 5, 1e-6},
      {"Sqrt", "", 1e4, 1e-7},
      {"Reciprocal", "", 10, 1e-7},
      {"Abs", "", 10, 0},
      {"Neg", "", 10, 0},
      // Relative below |gelu| = 4e-3 (x < -3) only as an absolute 1.6e-8: there e^(-x^2/2) carries
      // the rounding of x^2, which the AVX2 span (FMA) and the loop round differently.
      {"Gelu", "", 10, 4e-6, {}, 4e-3},
      {"Gelu", "joule", 10, 4e-6, {}, 4e-3},
      {"Gelu", "", 10, 4e-6, {{"approximate", std::string("tanh")}}},
  };
  std::mt19937 rng(3);
  for (const UnaryCase& c : cases) {
    for (int threads : {1, 2}) {
      const int64_t n = threads == 1 ? std::uniform_int_distribution<int64_t>(1, 300)(rng) : 70001;
      const Shape shape = {1, n % 7 + 1, n};
      GraphBuilder b;
      if (*c.domain) b.g.opsets[c.domain] = 1;
      b.g.opsets[""] = 20;
      b.input("x", DType::Float32, shape).node(c.op, {"x"}, {"y"}, c.attrs);
      b.g.nodes.back()->name = "op";
      b.g.nodes.back()->domain = c.domain;
      b.output("y");
      const Tensor x = values(shape, static_cast<uint32_t>(n), c.scale);
      const auto want = testing::run_with_algo(b.g, {{"x", x}}, {"reference"}, "op", threads);
      const auto got = testing::run_with_algo(b.g, {{"x", x}}, {"unary=simd"}, "op", threads);
      const std::string what = fmt::format("{}{} shape [1,{},{}] threads {}", *c.domain ? "joule " : "", c.op, shape[1], n, threads);
      ASSERT_EQ(got.algorithm, "simd") << what;
      expect_close(got.out.at("y"), want.out.at("y"), c.tol, what, c.floor);
    }
  }
}

TEST(EltwiseKernels, ClipWithConstantBoundsAndAttributes) {
  for (int opset : {6, 13}) {
    GraphBuilder b;
    b.g.opsets[""] = opset;
    b.input("x", DType::Float32, {3, 41});
    if (opset >= 11) {
      b.init("lo", Tensor::from_vector(std::vector<float>{-0.5f}, {}));
      b.init("hi", Tensor::from_vector(std::vector<float>{2.f}, {}));
      b.node("Clip", {"x", "lo", "hi"}, {"y"});
    } else {
      b.node("Clip", {"x"}, {"y"}, {{"min", -0.5f}, {"max", 2.f}});
    }
    b.g.nodes.back()->name = "op";
    b.output("y");
    const Tensor x = values({3, 41}, 5, 4);
    const auto want = testing::run_with_algo(b.g, {{"x", x}}, {"reference"}, "op");
    const auto got = testing::run_with_algo(b.g, {{"x", x}}, {"unary=simd"}, "op");
    ASSERT_EQ(got.algorithm, "simd");
    expect_close(got.out.at("y"), want.out.at("y"), 0, "Clip opset " + std::to_string(opset));
  }
}

TEST(EltwiseKernels, BinarySimdMatchesReferenceOnEveryBroadcast) {
  // a's shape, b's shape: equal, scalar either side, per-channel N,C,H,W, N,H,W,C gates, rows
  // broadcast both ways, a length-1 output, and large ones that two threads split.
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3, 5, 7}, {2, 3, 5, 7}}, {{2, 3, 5, 7}, {}},        {{}, {4, 9}},           {{1, 16, 7, 7}, {1, 16, 1, 1}},
      {{1, 7, 7, 16}, {1, 1, 1, 16}}, {{2, 5, 5, 24}, {2, 1, 1, 24}}, {{5, 1}, {1, 9}},   {{1, 1}, {1}},
      {{3, 1, 33}, {3, 17, 1}},     {{1, 64, 40, 40}, {1, 64, 1, 1}}, {{300, 300}, {300, 300}}, {{1, 60, 60, 40}, {1, 1, 1, 40}},
      {{70001}, {1}}};
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    for (size_t k = 0; k < shapes.size(); ++k) {
      for (int threads : {1, 2}) {
        const auto& [sa, sb] = shapes[k];
        GraphBuilder b;
        b.input("a", DType::Float32, sa).input("b", DType::Float32, sb).node(op, {"a", "b"}, {"y"});
        b.g.nodes.back()->name = "op";
        b.output("y");
        const runtime::TensorMap in = {{"a", values(sa, static_cast<uint32_t>(k), 3)}, {"b", values(sb, static_cast<uint32_t>(k + 50), 3)}};
        const auto want = testing::run_with_algo(b.g, in, {"reference"}, "op", threads);
        const auto got = testing::run_with_algo(b.g, in, {"binary=simd"}, "op", threads);
        const std::string what = fmt::format("{} case {} threads {}", op, k, threads);
        ASSERT_EQ(got.algorithm, "simd") << what;
        expect_close(got.out.at("y"), want.out.at("y"), 0, what);
      }
    }
  }
}


// One pooling node against the reference on `x`.
void expect_pool_matches(const std::string& op, const Tensor& x, std::map<std::string, ir::Attribute> attrs, double tol,
                         const std::string& what, int threads = 1, int opset = 13, const std::string& domain = "") {
  GraphBuilder b;
  b.g.opsets[""] = opset;
  b.input("x", x.dtype(), x.shape()).node(op, {"x"}, {"y"}, std::move(attrs));
  b.g.nodes.back()->name = "op";
  b.g.nodes.back()->domain = domain;
  if (!domain.empty()) b.g.opsets[domain] = 1;
  b.output("y");
  const auto want = testing::run_with_algo(b.g, {{"x", x}}, {"reference"}, "op", threads);
  const auto got = testing::run_with_algo(b.g, {{"x", x}}, {"pool=simd"}, "op", threads);
  ASSERT_EQ(got.algorithm, "simd") << what;
  const Tensor &g = got.out.at("y"), &w = want.out.at("y");
  // Sums in float cancel: averages are compared relative to the inputs' scale (about 1).
  if (x.dtype() == DType::Float32) return expect_close(g, w, tol, what, tol > 0 ? 1.0 : 1e-30);
  ASSERT_EQ(g.shape(), w.shape()) << what;
  for (int64_t i = 0; i < w.numel(); ++i)
    ASSERT_EQ(g.value_as_double(i), w.value_as_double(i)) << what << " element " << i;
}

TEST(EltwiseKernels, PoolSimdMatchesReference) {
  std::mt19937 rng(11);
  auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 80; ++i) {
    const int64_t kh = r(1, 4), kw = r(1, 4), sh = r(1, 3), sw = r(1, 3);
    const Shape shape = {r(1, 2), r(1, 5), r(kh, 30), r(kw, 40)};
    const std::vector<int64_t> pads = {r(0, kh - 1), r(0, kw - 1), r(0, kh - 1), r(0, kw - 1)};
    const int64_t ceil = r(0, 1), include = r(0, 1);
    std::map<std::string, ir::Attribute> attrs = {{"kernel_shape", std::vector<int64_t>{kh, kw}},
                                                  {"strides", std::vector<int64_t>{sh, sw}},
                                                  {"pads", pads},
                                                  {"ceil_mode", ceil}};
    const std::string what = fmt::format("case {}: x [{},{},{},{}] k {}x{} s {}x{} pads {},{},{},{} ceil {} include_pad {}", i,
                                         shape[0], shape[1], shape[2], shape[3], kh, kw, sh, sw, pads[0], pads[1], pads[2],
                                         pads[3], ceil, include);
    const Tensor x = values(shape, static_cast<uint32_t>(i), 5);
    expect_pool_matches("MaxPool", x, attrs, 0, "MaxPool " + what);
    Tensor codes(i % 2 ? DType::UInt8 : DType::Int8, shape);
    for (int64_t j = 0; j < codes.numel(); ++j)
      i % 2 ? void(codes.data<uint8_t>()[j] = static_cast<uint8_t>(r(0, 255))) : void(codes.data<int8_t>()[j] = static_cast<int8_t>(r(-128, 127)));
    expect_pool_matches("MaxPool", codes, attrs, 0, "MaxPool codes " + what);
    attrs["count_include_pad"] = include;
    expect_pool_matches("AveragePool", x, attrs, 1e-6, "AveragePool " + what);
    // joule's N,H,W,C pools (the channels_last pass), whose reference is the ONNX op's
    const Tensor xh = ops::movement::transpose_tensor(x, ops::movement::kNchwToNhwc);
    attrs["channels_last"] = int64_t{1};
    expect_pool_matches("AveragePool", xh, attrs, 1e-6, "N,H,W,C AveragePool " + what, 1, 13, "joule");
    attrs.erase("count_include_pad");
    expect_pool_matches("MaxPool", xh, attrs, 0, "N,H,W,C MaxPool " + what, 1, 13, "joule");
    expect_pool_matches("MaxPool", ops::movement::transpose_tensor(codes, ops::movement::kNchwToNhwc), attrs, 0,
                        "N,H,W,C MaxPool codes " + what, 1, 13, "joule");
  }
  // large enough for two threads
  const Tensor big = values({1, 64, 56, 56}, 3, 5);
  const std::map<std::string, ir::Attribute> k3s2 = {{"kernel_shape", std::vector<int64_t>{3, 3}},
                                                     {"strides", std::vector<int64_t>{2, 2}},
                                                     {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  expect_pool_matches("MaxPool", big, k3s2, 0, "MaxPool threads 2", 2);
  expect_pool_matches("AveragePool", big, k3s2, 1e-6, "AveragePool threads 2", 2);
  std::map<std::string, ir::Attribute> k3s2_nhwc = k3s2;
  k3s2_nhwc["channels_last"] = int64_t{1};
  const Tensor big_nhwc = ops::movement::transpose_tensor(big, ops::movement::kNchwToNhwc);
  expect_pool_matches("MaxPool", big_nhwc, k3s2_nhwc, 0, "N,H,W,C MaxPool threads 2", 2, 13, "joule");
  Tensor big_codes(DType::UInt8, big_nhwc.shape());
  for (int64_t j = 0; j < big_codes.numel(); ++j) big_codes.data<uint8_t>()[j] = static_cast<uint8_t>(j * 37 % 251);
  expect_pool_matches("MaxPool", big_codes, k3s2_nhwc, 0, "N,H,W,C MaxPool codes threads 2", 2, 13, "joule");
  expect_pool_matches("AveragePool", big_nhwc, k3s2_nhwc, 1e-6, "N,H,W,C AveragePool threads 2", 2, 13, "joule");
}

// The N,H,W,C pools' reference is the ONNX op's on the permuted tensor.
TEST(EltwiseKernels, NhwcPoolReferenceIsTheOnnxOpPermuted) {
  const Tensor x = values({2, 5, 9, 11}, 21, 5);
  const std::map<std::string, ir::Attribute> attrs = {{"kernel_shape", std::vector<int64_t>{3, 2}},
                                                      {"strides", std::vector<int64_t>{2, 1}},
                                                      {"pads", std::vector<int64_t>{1, 0, 1, 1}},
                                                      {"ceil_mode", int64_t{1}}};
  for (const char* op : {"MaxPool", "AveragePool"}) {
    GraphBuilder a, b;
    a.input("x", DType::Float32, x.shape()).node(op, {"x"}, {"y"}, attrs).output("y");
    auto cl = attrs;
    cl["channels_last"] = int64_t{1};
    const Tensor xh = ops::movement::transpose_tensor(x, ops::movement::kNchwToNhwc);
    b.input("x", DType::Float32, xh.shape()).node(op, {"x"}, {"y"}, cl).output("y");
    b.g.nodes.back()->domain = "joule";
    b.g.opsets["joule"] = 1;
    const Tensor want = ops::movement::transpose_tensor(testing::run_with_algo(a.g, {{"x", x}}, {"reference"}, "", 1).out.at("y"),
                                                        ops::movement::kNchwToNhwc);
    const Tensor got = testing::run_with_algo(b.g, {{"x", xh}}, {"reference"}, "", 1).out.at("y");
    expect_close(got, want, 0, op);
  }
}

TEST(EltwiseKernels, GlobalPoolsAndSpatialMeans) {
  for (const Shape& shape : {Shape{1, 3, 7, 7}, Shape{2, 5, 1, 33}, Shape{1, 40, 56, 56}}) {
    for (int threads : {1, 2}) {
      const Tensor x = values(shape, static_cast<uint32_t>(shape[1]), 4);
      const std::string what = fmt::format("x [{},{},{},{}] threads {}", shape[0], shape[1], shape[2], shape[3], threads);
      expect_pool_matches("GlobalAveragePool", x, {}, 1e-5, "GlobalAveragePool " + what, threads);
      expect_pool_matches("GlobalMaxPool", x, {}, 0, "GlobalMaxPool " + what, threads);
      for (int64_t keep : {0, 1}) {
        expect_pool_matches("ReduceMean", x, {{"axes", std::vector<int64_t>{2, 3}}, {"keepdims", keep}}, 1e-5,
                            "ReduceMean N,C,H,W " + what, threads);
        expect_pool_matches("ReduceMean", x, {{"axes", std::vector<int64_t>{1, -2}}, {"keepdims", keep}}, 1e-5,
                            "ReduceMean N,H,W,C " + what, threads);
      }
    }
  }
}

// Exactly equal tensors (dtype, shape, bytes).
void expect_same_bytes(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0) << what;
}

Tensor bytes_tensor(DType t, const Shape& s, uint32_t seed) {
  Tensor x(t, s);
  auto* p = static_cast<unsigned char*>(x.raw());
  std::mt19937 rng(seed);
  for (size_t i = 0; i < x.nbytes(); ++i) p[i] = static_cast<unsigned char>(rng());
  return x;
}

TEST(EltwiseKernels, TransposeConcatSliceMatchReference) {
  std::mt19937 rng(5);
  auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const DType types[] = {DType::Float32, DType::Int64, DType::UInt8, DType::Float16};
  for (int i = 0; i < 60; ++i) {
    Shape shape;
    for (int64_t d = r(2, 5); d > 0; --d) shape.push_back(r(1, 9));
    if (i % 10 == 0) shape = {1, 64, 40, 40};  // large enough for two threads
    if (i % 10 == 5) shape = i == 15 ? Shape{1, 3, 224, 224} : Shape{r(1, 2), (i / 10) % 3 + 1, r(1, 20), r(16, 70)};
    if (i % 10 == 7) shape = {r(1, 2), 3, r(1, 9), r(1, 70)};  // an image of bytes (int8/uint8 codes)
    const size_t rank = shape.size();
    std::vector<int64_t> perm(shape.size());
    for (size_t d = 0; d < perm.size(); ++d) perm[d] = static_cast<int64_t>(d);
    std::shuffle(perm.begin(), perm.end(), rng);
    // Images of 1 to 3 channels made N,H,W,C (the interleaving path; bytes in 3 planes have a
    // kernel of their own, widths below and above its 16 pixels); one large enough to split.
    const bool image = i % 10 == 5 || i % 10 == 7;
    if (image) perm = {0, 2, 3, 1};
    // images of codes and halves interleave too
    const DType t = i % 10 == 7 ? DType::UInt8 : types[(image ? i / 10 : i) % 4];
    const int threads = i % 10 == 0 || i == 15 ? 2 : 1;
    {
      GraphBuilder b;
      b.input("x", t, shape).node("Transpose", {"x"}, {"y"}, {{"perm", perm}});
      b.g.nodes.back()->name = "op";
      b.output("y");
      const Tensor x = bytes_tensor(t, shape, static_cast<uint32_t>(i));
      const auto want = testing::run_with_algo(b.g, {{"x", x}}, {"reference"}, "op", threads);
      const auto got = testing::run_with_algo(b.g, {{"x", x}}, {"transpose=tiled"}, "op", threads);
      ASSERT_EQ(got.algorithm, "tiled");
      expect_same_bytes(got.out.at("y"), want.out.at("y"), fmt::format("Transpose case {}", i));
    }
    {
      const int64_t axis = r(-static_cast<int64_t>(rank), static_cast<int64_t>(rank) - 1);
      const size_t a = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
      GraphBuilder b;
      std::vector<std::string> names;
      runtime::TensorMap in;
      for (int k = 0; k < static_cast<int>(r(1, 4)); ++k) {
        Shape s = shape;
        s[a] = r(0, 5);
        const std::string n = "x" + std::to_string(k);
        b.input(n, t, s);
        names.push_back(n);
        in[n] = bytes_tensor(t, s, static_cast<uint32_t>(100 * i + k));
      }
      b.node("Concat", names, {"y"}, {{"axis", axis}});
      b.g.nodes.back()->name = "op";
      b.output("y");
      const auto want = testing::run_with_algo(b.g, in, {"reference"}, "op", threads);
      const auto got = testing::run_with_algo(b.g, in, {"concat=copy"}, "op", threads);
      ASSERT_EQ(got.algorithm, "copy");
      expect_same_bytes(got.out.at("y"), want.out.at("y"), fmt::format("Concat case {} axis {}", i, axis));
    }
    {  // Slice: some axes (in any order, negative ones too), steps of either sign, starts and ends
       // past the bounds (clamped)
      std::vector<int64_t> starts, ends, axes, steps;
      std::vector<int64_t> order(rank);
      for (size_t d = 0; d < rank; ++d) order[d] = static_cast<int64_t>(d);
      std::shuffle(order.begin(), order.end(), rng);
      for (size_t j = 0; j < static_cast<size_t>(r(1, static_cast<int64_t>(rank))); ++j) {
        const int64_t dim = shape[static_cast<size_t>(order[j])];
        const int64_t step = i % 3 == 0 ? 1 : r(-3, 3) | 1;  // odd: never 0
        axes.push_back(r(0, 1) ? order[j] : order[j] - static_cast<int64_t>(rank));
        starts.push_back(r(-dim - 2, dim + 2));
        ends.push_back(i % 7 == 0 ? (step > 0 ? INT64_MAX : INT64_MIN) : r(-dim - 2, dim + 2));
        steps.push_back(step);
      }
      auto vec = [](const std::vector<int64_t>& v) { return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}); };
      GraphBuilder b;
      b.input("x", t, shape).init("st", vec(starts)).init("en", vec(ends)).init("ax", vec(axes)).init("sp", vec(steps));
      b.node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"});
      b.g.nodes.back()->name = "op";
      b.output("y");
      const Tensor x = bytes_tensor(t, shape, static_cast<uint32_t>(i + 7));
      const auto want = testing::run_with_algo(b.g, {{"x", x}}, {"reference"}, "op", threads);
      const auto got = testing::run_with_algo(b.g, {{"x", x}}, {"slice=copy"}, "op", threads);
      ASSERT_EQ(got.algorithm, "copy");
      expect_same_bytes(got.out.at("y"), want.out.at("y"), fmt::format("Slice case {} {}", i, shape_str(shape)));
    }
  }
}

TEST(EltwiseKernels, SoftmaxLayerNormBatchNormMatchReference) {
  std::mt19937 rng(9);
  auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 24; ++i) {
    const int threads = i % 6 == 5 ? 2 : 1;
    const int64_t big = threads == 2 ? 40 : 1;  // enough rows/planes for two threads
    const uint32_t seed = static_cast<uint32_t>(i);
    {  // Softmax: the last axis (opset 13) or the trailing part from axis (opset 11)
      const int opset = i % 2 ? 11 : 13;
      const Shape shape = {r(1, 3) * big, r(1, 5), r(1, 300)};
      const int64_t axis = opset == 13 ? (i % 4 ? -1 : 2) : r(0, 2);
      GraphBuilder b;
      b.g.opsets[""] = opset;
      b.input("x", DType::Float32, shape).node("Softmax", {"x"}, {"y"}, {{"axis", axis}});
      b.g.nodes.back()->name = "op";
      b.output("y");
      const Tensor x = values(shape, seed, 20);
      const auto want = testing::run_with_algo(b.g, {{"x", x}}, {"reference"}, "op", threads);
      const auto got = testing::run_with_algo(b.g, {{"x", x}}, {"softmax=simd"}, "op", threads);
      const std::string what = fmt::format("Softmax opset {} axis {} {}", opset, axis, shape_str(shape));
      ASSERT_EQ(got.algorithm, "simd") << what;
      expect_close(got.out.at("y"), want.out.at("y"), 2e-6, what, 1e-30);
    }
    {  // LayerNormalization over the last one or two dims; Scale/B of the normalised shape or broadcast
      const Shape shape = {r(1, 4) * big, r(1, 9), r(1, 200)};
      const int64_t axis = i % 3 ? -1 : 1;
      const Shape norm = axis == -1 ? Shape{shape[2]} : Shape{shape[1], shape[2]};
      GraphBuilder b;
      b.input("x", DType::Float32, shape)
          .init("scale", testing::random_tensor(norm, seed + 50, 0.5f, 2.f))
          .init("bias", testing::random_tensor(i % 2 ? norm : Shape{shape[2]}, seed + 60));
      b.node("LayerNormalization", {"x", "scale", "bias"}, {"y"}, {{"axis", axis}, {"epsilon", 1e-5f}});
      b.g.nodes.back()->name = "op";
      b.output("y");
      const Tensor x = i % 4 ? testing::random_tensor(shape, seed, -3, 5) : values(shape, seed, 4);
      const auto want = testing::run_with_algo(b.g, {{"x", x}}, {"reference"}, "op", threads);
      const auto got = testing::run_with_algo(b.g, {{"x", x}}, {"layer_norm=simd"}, "op", threads);
      const std::string what = fmt::format("LayerNormalization axis {} {}", axis, shape_str(shape));
      ASSERT_EQ(got.algorithm, "simd") << what;
      // Float statistics over up to 9 x 200 values, summed in another order than the reference's:
      // absolute near 0 (clang's build differed by 1.05e-6 over 8 x 159).
      expect_close(got.out.at("y"), want.out.at("y"), 4e-6, what, 1.0);
    }
    {  // inference BatchNormalization, N,C,H,W and N,C; joule's on N,H,W,C (channels_last)
      const int64_t c = r(1, 40);
      const bool nhwc = i % 3 == 1;
      const Shape shape = nhwc ? Shape{r(1, 2) * big, r(1, 15), r(1, 15), c}
                          : i % 5 == 4 ? Shape{r(1, 3), c} : Shape{r(1, 2) * big, c, r(1, 15), r(1, 15)};
      GraphBuilder b;
      b.input("x", DType::Float32, shape)
          .init("s", testing::random_tensor({c}, seed + 1, 0.5f, 1.5f))
          .init("bb", testing::random_tensor({c}, seed + 2))
          .init("m", testing::random_tensor({c}, seed + 3))
          .init("v", testing::random_tensor({c}, seed + 4, 0.1f, 2.f));
      b.node("BatchNormalization", {"x", "s", "bb", "m", "v"}, {"y"}, nhwc ? std::map<std::string, ir::Attribute>{{"channels_last", int64_t{1}}} : std::map<std::string, ir::Attribute>{});
      b.g.nodes.back()->name = "op";
      if (nhwc) {
        b.g.nodes.back()->domain = "joule";
        b.g.opsets["joule"] = 1;
      }
      b.output("y");
      const Tensor x = values(shape, seed, 10);
      const auto want = testing::run_with_algo(b.g, {{"x", x}}, {"reference"}, "op", threads);
      const auto got = testing::run_with_algo(b.g, {{"x", x}}, {"batch_norm=simd"}, "op", threads);
      const std::string what = std::string(nhwc ? "joule " : "") + "BatchNormalization " + shape_str(shape);
      ASSERT_EQ(got.algorithm, "simd") << what;
      expect_close(got.out.at("y"), want.out.at("y"), 1e-6, what, 1.0);  // an FMA: absolute near 0
    }
  }
}


// Gather (copy) and the views (alias) against the reference kernels, byte for byte: random
// shapes, axes and indices (negative ones, repeats, int32 and int64, constant or given at run
// time), element types of 1, 2, 4 and 8 bytes, 1 and 2 threads; an index out of range is
// BadInput on both.
TEST(EltwiseKernels, GatherAndViewsMatchReference) {
  std::mt19937 rng(9);
  auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const DType types[] = {DType::Float32, DType::Int64, DType::UInt8, DType::Float16};
  for (int i = 0; i < 40; ++i) {
    Shape shape;
    for (int64_t d = r(1, 4); d > 0; --d) shape.push_back(r(1, 7));
    if (i % 10 == 0) shape = {3, 64, 49, 32};  // swin's qkv, large enough for two threads
    const int64_t rank = static_cast<int64_t>(shape.size()), axis = r(-rank, rank - 1);
    const int64_t dim = shape[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
    const Shape ishape = i % 3 == 0 ? Shape{} : Shape{r(1, 4)};
    const DType it = i % 2 ? DType::Int64 : DType::Int32;
    Tensor idx(it, ishape);
    for (int64_t k = 0; k < idx.numel(); ++k) {
      const int64_t v = r(-dim, dim - 1);
      if (it == DType::Int64) idx.data<int64_t>()[k] = v;
      else idx.data<int32_t>()[k] = static_cast<int32_t>(v);
    }
    const DType t = types[i % 4];
    const bool constant = i % 4 < 2;
    const int threads = i % 10 == 0 ? 2 : 1;
    GraphBuilder b;
    b.input("x", t, shape);
    if (constant) b.init("i", idx);
    else b.input("i", it, ishape);
    b.node("Gather", {"x", "i"}, {"y"}, {{"axis", axis}});
    b.g.nodes.back()->name = "op";
    b.output("y");
    runtime::TensorMap in = {{"x", bytes_tensor(t, shape, static_cast<uint32_t>(i))}};
    if (!constant) in["i"] = idx;
    const auto want = testing::run_with_algo(b.g, in, {"reference"}, "op", threads);
    const auto got = testing::run_with_algo(b.g, in, {"gather=copy"}, "op", threads);
    const std::string what = fmt::format("Gather case {} {} axis {}", i, shape_str(shape), axis);
    ASSERT_EQ(got.algorithm, "copy") << what;
    expect_same_bytes(got.out.at("y"), want.out.at("y"), what);
    if (!constant && idx.numel() > 0) {  // out of range at run time: BadInput, as the reference
      Tensor bad = idx.clone();
      if (it == DType::Int64) bad.data<int64_t>()[0] = dim;
      else bad.data<int32_t>()[0] = static_cast<int32_t>(dim);
      in["i"] = bad;
      EXPECT_THROW(testing::run_with_algo(b.g, in, {"gather=copy"}, "op", threads), Error) << what;
    }
  }
  // Views: Reshape (0 and -1 in the spec), Flatten, Squeeze/Unsqueeze with axes as an input (opset 13).
  const Tensor x = bytes_tensor(DType::Float32, {2, 3, 1, 5}, 3);
  struct View {
    const char* op;
    std::vector<int64_t> spec;  // Reshape's shape or the axes
    std::map<std::string, ir::Attribute> attrs;
  };
  const std::vector<View> views = {{"Reshape", {0, -1, 5}, {}}, {"Reshape", {30}, {}}, {"Flatten", {}, {{"axis", int64_t{2}}}},
                                   {"Squeeze", {2}, {}},         {"Unsqueeze", {0, 5}, {}}};
  for (const View& v : views) {
    GraphBuilder b;
    b.input("x", DType::Float32, x.shape());
    std::vector<std::string> ins = {"x"};
    if (!v.spec.empty()) {
      b.init("s", Tensor::from_vector(v.spec, {static_cast<int64_t>(v.spec.size())}));
      ins.push_back("s");
    }
    b.node(v.op, ins, {"y"}, v.attrs);
    b.g.nodes.back()->name = "op";
    b.output("y");
    const auto want = testing::run_with_algo(b.g, {{"x", x}}, {"reference"}, "op", 1);
    const auto got = testing::run_with_algo(b.g, {{"x", x}}, {"view=alias"}, "op", 1);
    ASSERT_EQ(got.algorithm, "alias") << v.op;
    expect_same_bytes(got.out.at("y"), want.out.at("y"), v.op);
  }
}

// QuantizeLinear (ONNX's and joule's with a folded clamp) and DequantizeLinear: the quantize
// simd kernel gives the reference kernel's codes and floats bit for bit — per tensor and per
// axis, int8 and uint8, NaN/Inf/huge values, 1 and 2 threads (large tensors split).
TEST(EltwiseKernels, QuantizeSimdMatchesReference) {
  std::mt19937 rng(5);
  auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 60; ++i) {
    const int64_t rank = r(1, 4);
    Shape shape;
    for (int64_t d = 0; d < rank; ++d) shape.push_back(r(1, 9));
    if (i % 10 == 0) shape.back() = 40000 + r(0, 99);  // split over two threads
    const bool per_axis = i % 3 == 1 && rank > 1;
    const int64_t axis = per_axis ? r(-rank, rank - 1) : 1;
    const int64_t channels = per_axis ? shape[static_cast<size_t>(axis < 0 ? axis + rank : axis)] : 1;
    const DType codes = i % 2 ? DType::UInt8 : DType::Int8;
    const Shape ps = per_axis ? Shape{channels} : Shape{};
    Tensor scale = testing::random_tensor(ps, 100 + i, 0.01f, 0.2f), zp(codes, ps);
    for (int64_t c = 0; c < zp.numel(); ++c) {
      if (codes == DType::UInt8) zp.data<uint8_t>()[c] = static_cast<uint8_t>(r(0, 255));
      else zp.data<int8_t>()[c] = static_cast<int8_t>(r(-128, 127));
    }
    const int threads = shape.back() > 1000 ? 2 : 1;
    const std::string what = fmt::format("case {}: {} {} axis {}", i, shape_str(shape), dtype_name(codes), per_axis ? axis : 99);
    for (int form = 0; form < 3; ++form) {  // ONNX quantize, joule quantize (clamped), dequantize
      GraphBuilder b;
      Tensor x;
      if (form < 2) {
        x = values(shape, static_cast<uint32_t>(i), 30);
        b.input("x", DType::Float32, shape);
      } else {
        x = Tensor(codes, shape);
        for (int64_t j = 0; j < x.numel(); ++j) {
          if (codes == DType::UInt8) x.data<uint8_t>()[j] = static_cast<uint8_t>(r(0, 255));
          else x.data<int8_t>()[j] = static_cast<int8_t>(r(-128, 127));
        }
        b.input("x", codes, shape);
      }
      b.init("s", scale).init("z", zp);
      std::map<std::string, ir::Attribute> attrs = {{"axis", axis}};
      if (form == 1) {
        attrs["clip_min"] = i % 4 ? 0.f : -1.5f;
        if (i % 5 == 0) attrs["clip_max"] = 6.f;
      }
      b.node(form < 2 ? "QuantizeLinear" : "DequantizeLinear", {"x", "s", "z"}, {"y"}, attrs);
      b.g.nodes.back()->name = "op";
      if (form == 1) {
        b.g.nodes.back()->domain = "joule";
        b.g.opsets["joule"] = 1;
      }
      b.output("y");
      const auto want = testing::run_with_algo(b.g, {{"x", x}}, {"reference"}, "op", threads);
      const auto got = testing::run_with_algo(b.g, {{"x", x}}, {"quantize=simd"}, "op", threads);
      const std::string w = what + " form " + std::to_string(form);
      ASSERT_EQ(got.algorithm, "simd") << w;
      const Tensor &g = got.out.at("y"), &e = want.out.at("y");
      ASSERT_EQ(g.dtype(), e.dtype()) << w;
      ASSERT_EQ(g.nbytes(), e.nbytes()) << w;
      ASSERT_EQ(std::memcmp(g.raw(), e.raw(), g.nbytes()), 0) << w;
    }
  }
}

// joule's QuantizeLinear with a fused Add or Mul (fuse_quantize): the simd kernel, the reference
// kernel and the two separate ops (Add/Mul, then QuantizeLinear) give the same codes bit for
// bit — B of x's shape, a scalar, and repeated over one run of dims ([P, 1, R]: N,H,W,C and
// N,C,H,W gates, a bias row), NaN/Inf in both operands, with and without a clamp, 1 and 2
// threads. A B repeated over two separate runs of dims is left to the reference kernel.
TEST(EltwiseKernels, QuantizeWithFusedAddOrMulMatchesTheTwoOps) {
  std::mt19937 rng(9);
  auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int i = 0; i < 48; ++i) {
    const int64_t rank = r(1, 4);
    Shape shape;
    for (int64_t d = 0; d < rank; ++d) shape.push_back(r(1, 7));
    if (i % 8 == 0) shape.back() = 20000 + r(0, 99);  // split over two threads
    // B: x's dims, with one contiguous run [first, last] set to 1 (none for i % 4 == 0).
    Shape bs = shape;
    const int64_t first = r(0, rank - 1), last = r(first, rank - 1);
    if (i % 4) for (int64_t d = first; d <= last; ++d) bs[static_cast<size_t>(d)] = 1;
    if (i % 6 == 5) bs = {};  // a scalar
    if (i % 7 == 3 && bs.size() > 1) bs.erase(bs.begin());  // rank below x's
    const bool mul = i % 2, swap = i % 3 == 2, clamp = i % 5 == 1;
    const DType codes = i % 4 < 2 ? DType::UInt8 : DType::Int8;
    const Tensor x = values(shape, static_cast<uint32_t>(200 + i), 20), b = values(bs, static_cast<uint32_t>(300 + i), 3);
    Tensor zp(codes, {});
    if (codes == DType::UInt8) zp.data<uint8_t>()[0] = static_cast<uint8_t>(r(0, 255));
    else zp.data<int8_t>()[0] = static_cast<int8_t>(r(-128, 127));
    const Tensor scale = Tensor::scalar<float>(0.05f + 0.01f * static_cast<float>(i));
    const int threads = shape.back() > 1000 ? 2 : 1;
    const std::string what = fmt::format("case {}: x {} B {} {}", i, shape_str(shape), shape_str(bs), mul ? "Mul" : "Add");
    std::map<std::string, ir::Attribute> clip;
    if (clamp) clip["clip_min"] = 0.f;
    GraphBuilder sep;  // Add/Mul, then joule's QuantizeLinear (clamp only)
    sep.input("x", DType::Float32, shape).input("b", DType::Float32, bs).init("s", scale).init("z", zp);
    sep.node(mul ? "Mul" : "Add", {swap ? "b" : "x", swap ? "x" : "b"}, {"v"});
    sep.node("QuantizeLinear", {"v", "s", "z"}, {"y"}, clip);
    sep.g.nodes.back()->domain = "joule";
    sep.g.opsets["joule"] = 1;
    sep.output("y");
    GraphBuilder fused;
    std::map<std::string, ir::Attribute> attrs = clip;
    attrs["binary"] = std::string(mul ? "Mul" : "Add");
    fused.input("x", DType::Float32, shape).input("b", DType::Float32, bs).init("s", scale).init("z", zp);
    fused.node("QuantizeLinear", {"x", "s", "z", "b"}, {"y"}, attrs);
    fused.g.nodes.back()->domain = "joule";
    fused.g.nodes.back()->name = "op";
    fused.g.opsets["joule"] = 1;
    fused.output("y");
    const runtime::TensorMap in = {{"x", x}, {"b", b}};
    const auto want = testing::run_with_algo(sep.g, in, {"reference"}, "", threads);
    const auto ref = testing::run_with_algo(fused.g, in, {"reference"}, "op", threads);
    const auto got = testing::run_with_algo(fused.g, in, {"quantize=simd"}, "op", threads);
    ASSERT_EQ(got.algorithm, "simd") << what;
    const Tensor& e = want.out.at("y");
    for (const Tensor* g : {&ref.out.at("y"), &got.out.at("y")}) {
      ASSERT_EQ(g->dtype(), e.dtype()) << what;
      ASSERT_EQ(g->nbytes(), e.nbytes()) << what;
      ASSERT_EQ(std::memcmp(g->raw(), e.raw(), g->nbytes()), 0) << what;
    }
  }
  // [2,3,4,5] * [2,1,4,1]: repeated over dims 1 and 3, two runs: the reference kernel computes it.
  GraphBuilder two;
  two.input("x", DType::Float32, {2, 3, 4, 5}).input("b", DType::Float32, {2, 1, 4, 1});
  two.init("s", Tensor::scalar<float>(0.1f));
  two.node("QuantizeLinear", {"x", "s", "", "b"}, {"y"}, {{"binary", std::string("Mul")}});
  two.g.nodes.back()->domain = "joule";
  two.g.nodes.back()->name = "op";
  two.g.opsets["joule"] = 1;
  two.output("y");
  const runtime::TensorMap in = {{"x", values({2, 3, 4, 5}, 1, 5)}, {"b", values({2, 1, 4, 1}, 2, 2)}};
  EXPECT_EQ(testing::run_with_algo(two.g, in, {"guess"}, "op", 1).algorithm, "reference");
}

// RoiAlign's channels algorithm against the reference kernel: random maps, rois inside, across
// and outside the image (and degenerate ones), both modes, both coordinate transformations,
// fixed and adaptive sampling, several images, threads 1 and 2; and a case with few rois on a
// large map, where the algorithm runs the reference loop itself.
TEST(EltwiseKernels, RoiAlignChannelsMatchesReference) {
  std::mt19937 rng(11);
  struct Case {
    int64_t n, c, h, w, rois, oh, ow, sampling;
    std::string mode, ctm;
    int opset;
  };
  const std::vector<Case> cases = {
      {1, 19, 13, 17, 40, 7, 7, 2, "avg", "half_pixel", 16},     {2, 64, 20, 20, 60, 7, 5, 0, "avg", "half_pixel", 16},
      {1, 33, 9, 11, 30, 3, 4, 0, "max", "output_half_pixel", 16}, {3, 8, 16, 12, 50, 2, 2, 1, "avg", "", 10},
      {1, 256, 10, 10, 80, 7, 7, 2, "avg", "half_pixel", 16},    {1, 16, 90, 90, 2, 2, 2, 1, "avg", "half_pixel", 16},
  };
  for (const Case& k : cases)
    for (int threads : {1, 2}) {
      GraphBuilder b;
      b.g.opsets[""] = k.opset;
      b.input("x", DType::Float32, {k.n, k.c, k.h, k.w}).input("rois", DType::Float32, {k.rois, 4});
      b.input("idx", DType::Int64, {k.rois});
      std::map<std::string, ir::Attribute> attrs = {{"output_height", k.oh}, {"output_width", k.ow},
                                                    {"sampling_ratio", k.sampling}, {"mode", k.mode},
                                                    {"spatial_scale", 0.5f}};
      if (!k.ctm.empty()) attrs["coordinate_transformation_mode"] = k.ctm;
      b.node("RoiAlign", {"x", "rois", "idx"}, {"y"}, attrs);
      b.g.nodes.back()->name = "op";
      b.output("y");
      const Tensor x = testing::random_tensor({k.n, k.c, k.h, k.w}, static_cast<uint32_t>(k.c + threads), -3, 3);
      Tensor rois(DType::Float32, {k.rois, 4});
      Tensor idx(DType::Int64, {k.rois});
      std::uniform_real_distribution<float> pos(-10.f, 2.f * static_cast<float>(std::max(k.h, k.w)) + 10.f);
      for (int64_t r = 0; r < k.rois; ++r) {
        float x1 = pos(rng), y1 = pos(rng), x2 = pos(rng), y2 = pos(rng);
        if (r % 7 == 3) x2 = x1, y2 = y1;  // a point: degenerate
        rois.data<float>()[4 * r + 0] = std::min(x1, x2);
        rois.data<float>()[4 * r + 1] = std::min(y1, y2);
        rois.data<float>()[4 * r + 2] = std::max(x1, x2);
        rois.data<float>()[4 * r + 3] = std::max(y1, y2);
        idx.data<int64_t>()[r] = r % k.n;
      }
      const runtime::TensorMap in = {{"x", x}, {"rois", rois}, {"idx", idx}};
      const auto want = testing::run_with_algo(b.g, in, {"reference"}, "op", threads);
      const auto got = testing::run_with_algo(b.g, in, {"roi_align=channels"}, "op", threads);
      const std::string what = fmt::format("RoiAlign {} {} C {} {}x{} rois {} threads {}", k.mode, k.ctm, k.c, k.h, k.w, k.rois, threads);
      ASSERT_EQ(got.algorithm, "channels") << what;
      // sums of signed values cancel: the FMA-contracted AVX-512 loop differs in absolute terms
      expect_close(got.out.at("y"), want.out.at("y"), 1e-5, what, 1.0);
    }
}

}  // namespace
}  // namespace joule

namespace joule {

// joule LookupTable: the permute kernel (AVX-512 VBMI, or its byte loop; gathers for float32
// entries) against the reference on lengths around the vector sizes and one split over two
// threads, uint8 and int8 codes on both sides (an int8 code c reads entry uint8(c)) and float32
// entries; malformed tables refused in one line.
TEST(EltwiseKernels, LookupTablePermuteMatchesReference) {
  std::mt19937 rng(5);
  for (DType in_t : {DType::UInt8, DType::Int8})
    for (DType out_t : {DType::UInt8, DType::Int8}) {
      std::vector<int64_t> table(256);
      for (auto& v : table) v = out_t == DType::UInt8 ? rng() % 256 : static_cast<int64_t>(rng() % 256) - 128;
      for (int64_t n : {1, 7, 63, 64, 65, 200, 257, 100003}) {
        testing::GraphBuilder b;
        b.input("x", in_t, {n}).node("LookupTable", {"x"}, {"y"}, {{"table", table}, {"to", int64_t{dtype_to_onnx(out_t)}}}, "op").output("y");
        ir::Graph g = b.build();
        g.nodes.back()->domain = "joule";
        g.opsets["joule"] = 1;
        Tensor x(in_t, {n});
        for (int64_t i = 0; i < n; ++i) static_cast<uint8_t*>(x.raw())[i] = static_cast<uint8_t>(rng());
        const auto want = testing::run_with_algo(g, {{"x", x}}, {"reference"}, "op");
        for (int threads : {1, 2}) {
          const auto got = testing::run_with_algo(g, {{"x", x}}, {"lookup=permute"}, "op", threads);
          ASSERT_EQ(got.algorithm, "permute");
          const Tensor &a = got.out.at("y"), &w = want.out.at("y");
          ASSERT_EQ(a.dtype(), out_t);
          ASSERT_EQ(a.nbytes(), w.nbytes());
          EXPECT_EQ(std::memcmp(a.raw(), w.raw(), a.nbytes()), 0) << n << " threads " << threads;
          for (int64_t i = 0; i < n; i += 97)
            ASSERT_EQ(a.value_as_int(i), table[static_cast<uint8_t*>(x.raw())[i]]) << i;
        }
      }
    }
  // Float32 entries (a chain ending in float): the gather kernel, NaN and infinities included.
  std::vector<float> values(256);
  for (size_t i = 0; i < 256; ++i) values[i] = i == 3 ? kNaN : i == 4 ? -kInf : static_cast<float>(rng() % 2001) / 7.f - 140.f;
  for (int64_t n : {1, 15, 16, 17, 100003}) {
    testing::GraphBuilder b;
    b.input("x", DType::Int8, {n}).node("LookupTable", {"x"}, {"y"}, {{"values", values}, {"to", int64_t{1}}}, "op").output("y");
    ir::Graph g = b.build();
    g.nodes.back()->domain = "joule";
    g.opsets["joule"] = 1;
    Tensor x(DType::Int8, {n});
    for (int64_t i = 0; i < n; ++i) static_cast<uint8_t*>(x.raw())[i] = static_cast<uint8_t>(rng());
    const auto want = testing::run_with_algo(g, {{"x", x}}, {"reference"}, "op");
    for (int threads : {1, 2}) {
      const auto got = testing::run_with_algo(g, {{"x", x}}, {"lookup=permute"}, "op", threads);
      ASSERT_EQ(got.algorithm, "permute");
      ASSERT_EQ(got.out.at("y").dtype(), DType::Float32);
      EXPECT_EQ(std::memcmp(got.out.at("y").raw(), want.out.at("y").raw(), want.out.at("y").nbytes()), 0) << n;
    }
    for (int64_t i = 0; i < n; i += 31) {
      const float w = values[static_cast<uint8_t*>(x.raw())[i]], y = want.out.at("y").data<float>()[i];
      ASSERT_TRUE(std::isnan(w) ? std::isnan(y) : y == w) << i;
    }
  }
  testing::GraphBuilder b;
  b.input("x", DType::UInt8, {4}).node("LookupTable", {"x"}, {"y"}, {{"table", std::vector<int64_t>(255, 0)}, {"to", int64_t{2}}}, "op").output("y");
  ir::Graph g = b.build();
  g.nodes.back()->domain = "joule";
  g.opsets["joule"] = 1;
  try {
    runtime::Session s(g);
    FAIL() << "a 255-entry table accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has 255 entries, not 256"), std::string::npos) << e.what();
  }
}

}  // namespace joule
