// The recurrent algorithm (kernels/recurrent/) against the LSTM, GRU and RNN reference kernels:
// random sizes over every attribute the spec has (directions, layout, sequence_lens, initial
// states, peepholes, clip, input_forget, linear_before_reset, non-default activations with
// alpha/beta), batch slices on both sides of the matrix-vector/SGEMM switch, threads 1 and 2.
#include <fmt/core.h>

#include <random>

#include "graph_builder.h"
#include "kernel_test_util.h"

namespace joule {
namespace {

using testing::GraphBuilder;

struct Case {
  std::string op;
  int64_t seq, batch, input, hidden;
  std::string direction = "forward";
  int64_t layout = 0;
  bool bias = true, lens = false, init = false, peep = false, clip = false, input_forget = false, lbr = false,
       custom_acts = false;
};

std::string describe(const Case& c) {
  return fmt::format("{} seq {} batch {} input {} hidden {} {} layout {}{}{}{}{}{}{}{}{}", c.op, c.seq, c.batch, c.input, c.hidden,
                     c.direction, c.layout, c.bias ? " bias" : "", c.lens ? " lens" : "", c.init ? " init" : "",
                     c.peep ? " peep" : "", c.clip ? " clip" : "", c.input_forget ? " input_forget" : "", c.lbr ? " lbr" : "",
                     c.custom_acts ? " acts" : "");
}

// The graph of one case and its input values.
std::pair<ir::Graph, runtime::TensorMap> build(const Case& c, uint32_t seed) {
  const int64_t gates = c.op == "LSTM" ? 4 : c.op == "GRU" ? 3 : 1, dirs = c.direction == "bidirectional" ? 2 : 1;
  const Shape xs = c.layout ? Shape{c.batch, c.seq, c.input} : Shape{c.seq, c.batch, c.input};
  const Shape state = c.layout ? Shape{c.batch, dirs, c.hidden} : Shape{dirs, c.batch, c.hidden};
  const float ws = 1.f / std::sqrt(static_cast<float>(c.hidden));
  GraphBuilder b;
  b.input("x", DType::Float32, xs)
      .init("W", testing::random_tensor({dirs, gates * c.hidden, c.input}, seed + 1, -ws, ws))
      .init("R", testing::random_tensor({dirs, gates * c.hidden, c.hidden}, seed + 2, -ws, ws));
  std::vector<std::string> ins = {"x", "W", "R", "", "", ""};
  if (c.bias) {
    b.init("B", testing::random_tensor({dirs, 2 * gates * c.hidden}, seed + 3, -0.5f, 0.5f));
    ins[3] = "B";
  }
  runtime::TensorMap in = {{"x", testing::random_tensor(xs, seed, -2.f, 2.f)}};
  if (c.lens) {
    std::mt19937 rng(seed);
    std::vector<int32_t> lens(static_cast<size_t>(c.batch));
    for (auto& l : lens) l = std::uniform_int_distribution<int32_t>(0, static_cast<int32_t>(c.seq))(rng);
    lens[0] = static_cast<int32_t>(c.seq);
    b.input("lens", DType::Int32, {c.batch});
    in["lens"] = Tensor::from_vector(lens, {c.batch});
    ins[4] = "lens";
  }
  if (c.init) {
    b.input("h0", DType::Float32, state);
    in["h0"] = testing::random_tensor(state, seed + 4, -1.f, 1.f);
    ins[5] = "h0";
    if (c.op == "LSTM") {
      b.input("c0", DType::Float32, state);
      in["c0"] = testing::random_tensor(state, seed + 5, -1.f, 1.f);
      ins.push_back("c0");
    }
  }
  if (c.peep) {
    ins.resize(7);
    b.init("P", testing::random_tensor({dirs, 3 * c.hidden}, seed + 6, -0.5f, 0.5f));
    ins.push_back("P");
  }
  while (!ins.empty() && ins.back().empty()) ins.pop_back();
  std::map<std::string, ir::Attribute> attrs = {{"hidden_size", c.hidden}, {"direction", c.direction}, {"layout", c.layout}};
  if (c.clip) attrs["clip"] = 0.7f;
  if (c.input_forget) attrs["input_forget"] = int64_t{1};
  if (c.lbr) attrs["linear_before_reset"] = int64_t{1};
  if (c.custom_acts) {
    std::vector<std::string> acts = c.op == "LSTM"  ? std::vector<std::string>{"HardSigmoid", "LeakyRelu", "ScaledTanh"}
                                    : c.op == "GRU" ? std::vector<std::string>{"HardSigmoid", "Softsign"}
                                                    : std::vector<std::string>{"Affine"};
    // the reverse direction: other functions (each direction has its own list)
    const std::vector<std::string> rev = c.op == "LSTM"  ? std::vector<std::string>{"Sigmoid", "Elu", "Softplus"}
                                         : c.op == "GRU" ? std::vector<std::string>{"ThresholdedRelu", "Relu"}
                                                         : std::vector<std::string>{"Softsign"};
    if (dirs == 2) acts.insert(acts.end(), rev.begin(), rev.end());
    attrs["activations"] = acts;
    attrs["activation_alpha"] = std::vector<float>{0.3f, 0.2f, 0.9f, 0.25f};
    attrs["activation_beta"] = std::vector<float>{0.4f, 1.1f, 0.6f};
  }
  std::vector<std::string> outs = {"y", "y_h"};
  if (c.op == "LSTM") outs.push_back("y_c");
  b.node(c.op, ins, outs, attrs, "rnn");
  for (auto& o : outs) b.output(o);
  return {b.g, in};
}

TEST(RecurrentKernels, FusedMatchesReferenceOnEveryAttribute) {
  std::mt19937 rng(11);
  std::vector<Case> cases;
  for (const char* op : {"LSTM", "GRU", "RNN"})
    for (const char* dir : {"forward", "reverse", "bidirectional"})
      for (int variant = 0; variant < 4; ++variant) {
        Case c{op, std::uniform_int_distribution<int64_t>(1, 9)(rng), variant == 3 ? 11 : std::uniform_int_distribution<int64_t>(1, 4)(rng),
               std::uniform_int_distribution<int64_t>(1, 20)(rng), std::uniform_int_distribution<int64_t>(1, 37)(rng), dir};
        c.layout = variant % 2;
        c.bias = variant != 1;
        c.lens = variant >= 2;
        c.init = variant != 0;
        c.peep = c.op == "LSTM" && variant >= 1;
        c.clip = variant == 2;
        c.input_forget = c.op == "LSTM" && variant == 3;
        c.lbr = c.op == "GRU" && variant % 2 == 1;
        c.custom_acts = variant == 2;
        cases.push_back(c);
      }
  // Batch 1 with several panels of 64 columns of R^T and a partial last one (the AVX2 one-row path).
  cases.push_back(Case{"LSTM", 6, 1, 12, 100, "bidirectional"});
  cases.push_back(Case{"GRU", 5, 1, 9, 70, "forward"});
  cases.push_back(Case{"RNN", 4, 1, 7, 130, "reverse"});
  // 2-16 rows from the same panels: blocks of 4 rows and the last 1-3.
  cases.push_back(Case{"LSTM", 5, 7, 10, 70, "bidirectional"});
  cases.push_back(Case{"GRU", 3, 6, 8, 33, "forward"});
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto [g, in] = build(cases[i], static_cast<uint32_t>(100 + i));
    const auto want = testing::run_with_algo(g, in, {"reference"}, "rnn");
    for (int threads : {1, 2}) {
      const std::string what = describe(cases[i]) + fmt::format(" threads {}", threads);
      const auto got = testing::run_with_algo(g, in, {"recurrent=gemm_fused"}, "rnn", threads);
      ASSERT_EQ(got.algorithm, "gemm_fused") << what;
      for (auto& [name, t] : want.out) EXPECT_LT(testing::rel_error(got.out.at(name), t), 2e-5) << what << " output " << name;
    }
  }
}

// The default plan picks the fast algorithm (no `reference` on a recurrent model's hot path).
TEST(RecurrentKernels, ChosenByDefault) {
  const auto [g, in] = build(Case{"LSTM", 5, 2, 8, 16, "bidirectional"}, 7);
  const auto got = testing::run_with_algo(g, in, {}, "rnn");
  EXPECT_EQ(got.algorithm, "gemm_fused");
}

}  // namespace
}  // namespace joule
