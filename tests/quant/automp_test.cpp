// AutoMP's search on a score function whose damage per layer is known: greedy climbs only the
// layers that matter and gives back what later promotions made unnecessary; bisect moves the
// fewest top-ranked layers; promotions change the formats as the ladder says.
#include <gtest/gtest.h>

#include <map>

#include "joule/core/error.h"
#include "joule/quant/automp.h"

using namespace joule;
using namespace joule::quant;

namespace {

std::vector<NodeChoice> four_int4_nodes() {
  std::vector<NodeChoice> v(4);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i].node = i;
    TensorSpec w;
    w.format = int_format(4, true, Granularity::PerChannel, 0);
    TensorSpec in;
    in.format = int_format(4, false);
    v[i].roles[static_cast<int>(Role::Weight)] = w;
    v[i].roles[static_cast<int>(Role::Input)] = in;
  }
  return v;
}

// Damage a node does at each precision: node 2 costs 3 points at int4 and 1 at int16 (only
// fp32 heals it fully); node 0 costs 0.6 at int4; the others 0.01.
double score_of(const std::vector<NodeChoice>& cs, int* evaluations) {
  ++*evaluations;
  std::map<size_t, int> bits;  // node -> weight bits (32 for float formats)
  for (auto& c : cs) {
    const auto& w = c.roles[static_cast<int>(Role::Weight)];
    bits[c.node] = w && w->format.kind == FormatKind::Int ? w->format.bits : 16;
  }
  double damage = 0;
  for (size_t n = 0; n < 4; ++n) {
    auto it = bits.find(n);
    if (it == bits.end()) continue;  // fp32
    if (n == 2) damage += it->second <= 4 ? 3.0 : 1.0;
    else if (n == 0) damage += it->second <= 4 ? 0.6 : 0.0;
    else damage += 0.01;
  }
  return 90.0 - damage;
}

}  // namespace

TEST(AutoMp, GreedyPromotesTheDamagingLayersAndGivesBackTheRest) {
  int evals = 0;
  AutoMpOptions o;
  o.ladder = {"int16", "fp32"};
  o.max_drop = 0.1;
  // Ranked by isolated damage, most first: 2, 0, 1, 3.
  AutoMpResult r = automp(four_int4_nodes(), {2, 0, 1, 3}, [&](auto& cs) { return score_of(cs, &evals); }, 90.0, o);
  EXPECT_TRUE(r.met);
  ASSERT_EQ(r.rung.size(), 4u);
  EXPECT_EQ(r.rung[2], "fp32");   // int16 is not enough for it
  EXPECT_EQ(r.rung[0], "int16");  // int16 heals it
  EXPECT_EQ(r.rung[1], "");
  EXPECT_EQ(r.rung[3], "");
  EXPECT_EQ(r.promoted(), 2u);
  EXPECT_NEAR(r.final_score, 90.0 - 0.02, 1e-9);
  EXPECT_NEAR(r.start_score, 90.0 - 3.62, 1e-9);
  EXPECT_EQ(r.choices.size(), 3u);  // the fp32 node left out of the quantized set
  EXPECT_LE(r.steps.size(), static_cast<size_t>(evals));  // (+1 when the final state is re-scored)
}

TEST(AutoMp, BisectFindsTheFewestTopRankedLayersAtTheLastRung) {
  int evals = 0;
  AutoMpOptions o;
  o.ladder = {"int16", "fp32"};
  o.max_drop = 0.1;
  o.strategy = "bisect";
  AutoMpResult r = automp(four_int4_nodes(), {2, 0, 1, 3}, [&](auto& cs) { return score_of(cs, &evals); }, 90.0, o);
  EXPECT_TRUE(r.met);
  EXPECT_EQ(r.rung, (std::vector<std::string>{"fp32", "", "fp32", ""}));
  EXPECT_LE(evals, 5);  // start, everything, then log2(4) halvings
}

TEST(AutoMp, UnreachableBoundIsReportedNotMet) {
  int evals = 0;
  AutoMpOptions o;
  o.ladder = {"int16"};  // no fp32 rung: node 2 keeps costing 1 point
  o.max_drop = 0.1;
  AutoMpResult r = automp(four_int4_nodes(), {2, 0, 1, 3}, [&](auto& cs) { return score_of(cs, &evals); }, 90.0, o);
  EXPECT_FALSE(r.met);
}

TEST(AutoMp, PromotionFollowsTheLadder) {
  const NodeChoice c = four_int4_nodes()[0];
  auto p16 = promote(c, "int16");
  ASSERT_TRUE(p16);
  EXPECT_EQ(p16->roles[static_cast<int>(Role::Weight)]->format.bits, 16);
  EXPECT_TRUE(p16->roles[static_cast<int>(Role::Weight)]->format.symmetric);
  EXPECT_EQ(p16->roles[static_cast<int>(Role::Weight)]->format.granularity, Granularity::PerChannel);
  EXPECT_FALSE(p16->roles[static_cast<int>(Role::Input)]->format.symmetric);
  auto bf = promote(c, "bf16");
  ASSERT_TRUE(bf);
  EXPECT_EQ(bf->roles[static_cast<int>(Role::Weight)]->format.kind, FormatKind::BFloat16);
  EXPECT_FALSE(promote(c, "fp32"));
  EXPECT_THROW(check_ladder({"int17"}), Error);
  EXPECT_THROW(check_ladder({"posit8"}), Error);
  EXPECT_THROW(check_ladder({}), Error);
}
