// The regressor's description of an operator instance: the same product described alike
// whatever op type and weight layout computes it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "joule/predict/features.h"

using namespace joule;
using namespace joule::predict;

namespace {

opdb::OpKey key(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                std::map<std::string, std::string> attrs = {}) {
  opdb::OpKey k;
  k.op_type = op;
  k.inputs = std::move(in);
  k.outputs = std::move(out);
  for (auto& [name, v] : attrs) k.attrs[name] = v;
  return k;
}

// The named features of a key.
std::map<std::string, float> named(const opdb::OpKey& k) {
  const std::vector<float> f = features(k, 1e6, 1e5, 1, 0, 0, 0.01);
  EXPECT_EQ(f.size(), feature_names().size());
  std::map<std::string, float> m;
  for (size_t i = 0; i < f.size(); ++i) m[feature_names()[i]] = f[i];
  return m;
}

}  // namespace

TEST(PredictFeatures, AProductIsTheSameGemmWhateverTheOpAndWeightLayout) {
  // [197,768] x [768,2304]: a Gemm with its weight [N,K] under transB, a MatMul of a batch of
  // one with [K,N].
  const auto gemm = named(key("Gemm", {"float32[197,768]", "const float32[2304,768]", "const float32[2304]"},
                              {"float32[197,2304]"}, {{"transB", "1"}}));
  const auto mm = named(key("joule.FusedMatMul", {"float32[1,197,768]", "const float32[768,2304]", "const float32[2304]"},
                            {"float32[1,197,2304]"}));
  for (const char* f : {"gemm_m", "gemm_n", "gemm_k", "gemm_batch"}) EXPECT_EQ(gemm.at(f), mm.at(f)) << f;
  EXPECT_EQ(gemm.at("gemm_m"), 197);
  EXPECT_EQ(gemm.at("gemm_n"), 2304);
  EXPECT_EQ(gemm.at("gemm_k"), 768);
  EXPECT_EQ(gemm.at("gemm_batch"), 1);
  // Dims right-aligned: M and K in the same places for a rank-2 and a rank-3 input.
  EXPECT_EQ(gemm.at("in0_d3"), mm.at("in0_d3"));
  EXPECT_EQ(gemm.at("in0_d4"), mm.at("in0_d4"));
  EXPECT_TRUE(std::isnan(gemm.at("in0_d2")));
  EXPECT_EQ(mm.at("in0_d2"), 1);

  // Attention scores: 12 heads of [197,64] x [64,197].
  const auto att = named(key("MatMul", {"float32[1,12,197,64]", "float32[1,12,64,197]"}, {"float32[1,12,197,197]"}));
  EXPECT_EQ(att.at("gemm_m"), 197);
  EXPECT_EQ(att.at("gemm_n"), 197);
  EXPECT_EQ(att.at("gemm_k"), 64);
  EXPECT_EQ(att.at("gemm_batch"), 12);
}

TEST(PredictFeatures, AConvolutionIsTheGemmOfItsGroups) {
  // 64 -> 128 channels in 4 groups, 3x3 stride 2, 28x28 -> 14x14, channels-last: the same
  // GEMM as in N,C,H,W.
  const std::map<std::string, std::string> attrs = {{"group", "4"}, {"kernel_shape", "[3,3]"}, {"strides", "[2,2]"}};
  auto with_layout = attrs;
  with_layout["channels_last"] = "1";
  const auto nchw = named(key("joule.FusedConv", {"float32[1,64,28,28]", "const float32[128,16,3,3]"},
                              {"float32[1,128,14,14]"}, attrs));
  const auto nhwc = named(key("joule.FusedConv", {"float32[1,28,28,64]", "const float32[128,16,3,3]"},
                              {"float32[1,14,14,128]"}, with_layout));
  EXPECT_EQ(nchw.at("gemm_m"), 14 * 14);
  EXPECT_EQ(nchw.at("gemm_n"), 128 / 4);
  EXPECT_EQ(nchw.at("gemm_k"), 16 * 9);
  EXPECT_EQ(nchw.at("gemm_batch"), 4);
  for (const char* f : {"gemm_m", "gemm_n", "gemm_k", "gemm_batch", "in0_d3", "out0_d2"})
    EXPECT_EQ(nchw.at(f), nhwc.at(f)) << f;
  EXPECT_EQ(nhwc.at("channels_last"), 1);

  // Neither a product nor a convolution: no GEMM.
  const auto relu = named(key("Relu", {"float32[1,64,28,28]"}, {"float32[1,64,28,28]"}));
  for (const char* f : {"gemm_m", "gemm_n", "gemm_k", "gemm_batch"}) EXPECT_TRUE(std::isnan(relu.at(f))) << f;
}
