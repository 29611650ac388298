#include <gtest/gtest.h>

#include "joule/profile/stats.h"

using namespace joule::profile;

TEST(Stats, HandComputedValues) {
  // 1..10: mean 5.5, median 5.5, sample std sqrt(82.5/9), p90 = 9.1 (linear interpolation).
  std::vector<double> v{3, 1, 2, 10, 4, 5, 6, 7, 8, 9};
  Stats s = summarize(v);
  EXPECT_EQ(s.n, 10u);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_NEAR(s.std, 3.0276503540974917, 1e-12);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_NEAR(s.p90, 9.1, 1e-12);
  EXPECT_NEAR(s.p99, 9.91, 1e-12);
  EXPECT_EQ(s.trimmed, 0u);
  EXPECT_TRUE(s.noisy);  // cv 0.55
}

TEST(Stats, ThreeSigmaTrimmingDropsTheOutlier) {
  std::vector<double> v(20, 1.0);
  v[3] = 1.1;
  v.push_back(100.0);  // one huge outlier
  Stats s = summarize(v);
  EXPECT_EQ(s.trimmed, 1u);
  EXPECT_NEAR(s.trimmed_mean, (19 * 1.0 + 1.1) / 20, 1e-12);
  EXPECT_GT(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.median, 1.0);
}

TEST(Stats, QuietSeriesIsNotNoisyAndEdgeCases) {
  Stats s = summarize({10.0, 10.1, 9.9, 10.0});
  EXPECT_FALSE(s.noisy);
  EXPECT_LT(s.cv, 0.01);
  Stats one = summarize({4.0});
  EXPECT_DOUBLE_EQ(one.median, 4.0);
  EXPECT_DOUBLE_EQ(one.std, 0.0);
  EXPECT_EQ(summarize({}).n, 0u);
  EXPECT_DOUBLE_EQ(percentile({5, 1}, 0), 1.0);
}
