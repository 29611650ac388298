// Training convolutions on oneDNN against the reference kernels on random geometries (groups,
// depthwise, strides, dilations, asymmetric pads, 1-D, batch, threads): Conv with its weights as
// inputs (runtime weights), joule.ConvGradData and joule.ConvGradWeight (with the bias gradient).
#include <fmt/core.h>

#include "graph_builder.h"
#include "joule/ops/conv_util.h"
#include "kernel_test_util.h"

namespace joule {
namespace {

using testing::GraphBuilder;
using Ints = std::vector<int64_t>;

struct Geometry {
  Shape x, w, y;
  std::map<std::string, ir::Attribute> attrs;
  std::string str() const { return shape_str(x) + " * " + shape_str(w) + " -> " + shape_str(y); }
};

Geometry random_geometry(std::mt19937& rng) {
  auto r = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (;;) {
    Geometry g;
    const bool one_d = r(0, 5) == 0;
    const int64_t kind = r(0, 5);  // 0: depthwise, 1: two groups, else one
    const int64_t group = kind == 0 ? r(1, 16) : kind == 1 ? 2 : 1;
    const int64_t c = kind == 0 ? group : r(1, 12) * group, m = kind == 0 ? group : r(1, 12) * group;
    const int64_t n = r(1, 3), h = one_d ? 1 : r(1, 14), w = r(1, 14);
    const int64_t kh = one_d ? 1 : r(1, 4), kw = r(1, 4), sh = one_d ? 1 : r(1, 2), sw = r(1, 2);
    const int64_t dh = one_d ? 1 : r(1, 2), dw = r(1, 2);
    const int64_t pt = one_d ? 0 : r(0, 2), pb = one_d ? 0 : r(0, 2), pl = r(0, 2), pr = r(0, 2);
    const int64_t oh = (h + pt + pb - ((kh - 1) * dh + 1)), ow = (w + pl + pr - ((kw - 1) * dw + 1));
    if (oh < 0 || ow < 0) continue;
    if (one_d) {
      g.x = {n, c, w};
      g.w = {m, c / group, kw};
      g.y = {n, m, ow / sw + 1};
      g.attrs = {{"strides", Ints{sw}}, {"dilations", Ints{dw}}, {"pads", Ints{pl, pr}}, {"group", group}};
    } else {
      g.x = {n, c, h, w};
      g.w = {m, c / group, kh, kw};
      g.y = {n, m, oh / sh + 1, ow / sw + 1};
      g.attrs = {{"strides", Ints{sh, sw}}, {"dilations", Ints{dh, dw}}, {"pads", Ints{pt, pl, pb, pr}}, {"group", group}};
    }
    return g;
  }
}

void expect_same(const ir::Graph& g, const runtime::TensorMap& in, const std::string& node, int threads,
                 const std::string& what) {
  const std::string cls = g.nodes.back()->op_type == "Conv" ? "conv" : g.nodes.back()->op_type == "ConvGradData" ? "conv_grad_data" : "conv_grad_weight";
  const testing::AlgoRun ref = testing::run_with_algo(g, in, {"reference"}, node, threads);
  const testing::AlgoRun fast = testing::run_with_algo(g, in, {cls + "=onednn"}, node, threads);
  ASSERT_EQ(fast.algorithm, "onednn") << what;
  for (auto& [name, t] : ref.out) EXPECT_LT(testing::rel_error(fast.out.at(name), t), 1e-4) << what << " " << name;
}

TEST(ConvGradAlgorithms, OnednnMatchesReferenceOnRandomGeometries) {
  std::mt19937 rng(7);
  for (int k = 0; k < 60; ++k) {
    const Geometry geo = random_geometry(rng);
    const int threads = 1 + k % 2;
    const std::string what = fmt::format("case {}: {}", k, geo.str());
    const Tensor x = testing::random_tensor(geo.x, 3 * k), w = testing::random_tensor(geo.w, 3 * k + 1);
    const Tensor dy = testing::random_tensor(geo.y, 3 * k + 2), b = testing::random_tensor({geo.w[0]}, 5 * k);
    {  // forward with the weights as inputs
      GraphBuilder gb;
      gb.input("x", DType::Float32, geo.x).input("w", DType::Float32, geo.w).input("b", DType::Float32, {geo.w[0]});
      gb.node("Conv", {"x", "w", "b"}, {"y"}, geo.attrs, "conv").output("y");
      expect_same(gb.build(), {{"x", x}, {"w", w}, {"b", b}}, "conv", threads, what + " forward");
    }
    {
      GraphBuilder gb;
      auto attrs = geo.attrs;
      attrs["input_shape"] = geo.x;
      gb.input("dy", DType::Float32, geo.y).input("w", DType::Float32, geo.w);
      gb.node("ConvGradData", {"dy", "w"}, {"dx"}, attrs, "grad");
      gb.g.nodes.back()->domain = "joule";
      gb.output("dx");
      expect_same(gb.build(), {{"dy", dy}, {"w", w}}, "grad", threads, what + " data");
    }
    for (bool bias : {false, true}) {
      GraphBuilder gb;
      auto attrs = geo.attrs;
      attrs["weight_shape"] = geo.w;
      gb.input("x", DType::Float32, geo.x).input("dy", DType::Float32, geo.y);
      gb.node("ConvGradWeight", {"x", "dy"}, bias ? std::vector<std::string>{"dw", "db"} : std::vector<std::string>{"dw"},
              attrs, "grad");
      gb.g.nodes.back()->domain = "joule";
      gb.output("dw");
      if (bias) gb.output("db");
      expect_same(gb.build(), {{"x", x}, {"dy", dy}}, "grad", threads, what + (bias ? " weight+bias" : " weight"));
    }
  }
}

}  // namespace
}  // namespace joule
