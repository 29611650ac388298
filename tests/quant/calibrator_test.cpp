#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "joule/core/error.h"
#include "joule/quant/calibrator.h"

using namespace joule;
using namespace joule::quant;

namespace {

CalibOptions opts(CalibMethod m, bool symmetric = true) {
  CalibOptions o;
  o.method = m;
  o.symmetric = symmetric;
  return o;
}

constexpr CalibMethod kAllMethods[] = {CalibMethod::MinMax, CalibMethod::MovingAverage,
                                       CalibMethod::Percentile, CalibMethod::Entropy, CalibMethod::Mse};

std::vector<float> gaussian(size_t n, float sigma, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

TEST(Calibrator, MethodNamesRoundTrip) {
  for (CalibMethod m : kAllMethods) EXPECT_EQ(calib_method_from_name(calib_method_name(m)), m);
  EXPECT_EQ(calib_method_from_name("moving_average"), CalibMethod::MovingAverage);
  EXPECT_THROW(calib_method_from_name("kl"), Error);
}

TEST(Calibrator, RejectsBadOptions) {
  CalibOptions o = opts(CalibMethod::Percentile);
  o.percentile = 0;
  EXPECT_THROW(Calibrator{o}, Error);
  o.percentile = 100.5;
  EXPECT_THROW(Calibrator{o}, Error);
  o = opts(CalibMethod::MovingAverage);
  o.momentum = 0;
  EXPECT_THROW(Calibrator{o}, Error);
  o = opts(CalibMethod::Mse, false);
  o.bins = 2047;  // asymmetric histograms need the zero edge in the middle
  EXPECT_THROW(Calibrator{o}, Error);
  o = opts(CalibMethod::Entropy, false);
  o.bins = 200;  // 100 |x| bins < 128 quantized bins
  EXPECT_THROW(Calibrator{o}, Error);
  o.symmetric = true;
  EXPECT_NO_THROW(Calibrator{o});
  o.bits = 1;
  EXPECT_THROW(Calibrator{o}, Error);
}

TEST(Calibrator, MinMaxIsExactAndIgnoresNonFinite) {
  Calibrator c(opts(CalibMethod::MinMax));
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> a{0.5f, -1.25f, std::nanf(""), 3.f};
  std::vector<float> b{inf, -inf, 2.f, -0.75f};
  c.observe(a.data(), 4);
  c.observe(b.data(), 4);
  EXPECT_EQ(c.range(), std::make_pair(-1.25f, 3.f));
  EXPECT_EQ(c.count(), 5);
  EXPECT_EQ(c.ignored(), 3);
}

TEST(Calibrator, EmptyOrAllNonFiniteIsAnError) {
  for (CalibMethod m : kAllMethods) {
    Calibrator c(opts(m));
    EXPECT_THROW(c.range(), Error);
    std::vector<float> bad{std::nanf(""), std::numeric_limits<float>::infinity()};
    c.observe(bad.data(), 2);
    c.observe(nullptr, 0);
    EXPECT_THROW(c.range(), Error) << calib_method_name(m);
    EXPECT_EQ(c.ignored(), 2);
  }
  Calibrator c(opts(CalibMethod::MinMax));
  EXPECT_THROW(c.observe(nullptr, 3), Error);
}

TEST(Calibrator, NonFiniteValuesDoNotMoveAnyMethod) {
  const std::vector<float> clean = gaussian(4000, 1.f, 11);
  std::vector<float> dirty = clean;
  for (size_t i = 0; i < 40; ++i)
    dirty.insert(dirty.begin() + static_cast<long>(i * 97),
                 i % 2 ? std::nanf("") : -std::numeric_limits<float>::infinity());
  for (bool sym : {true, false})
    for (CalibMethod m : kAllMethods) {
      Calibrator a(opts(m, sym)), b(opts(m, sym));
      a.observe(clean.data(), static_cast<int64_t>(clean.size()));
      b.observe(dirty.data(), static_cast<int64_t>(dirty.size()));
      EXPECT_EQ(a.range(), b.range()) << calib_method_name(m);
      EXPECT_EQ(b.ignored(), 40);
    }
}

TEST(Calibrator, MovingAverageFollowsTorchRule) {
  CalibOptions o = opts(CalibMethod::MovingAverage);
  o.momentum = 0.5;
  Calibrator c(o);
  std::vector<float> b1{-1.f, 2.f, 0.f}, b2{-3.f, 4.f}, b3{0.f, 1.f, std::nanf("")};
  c.observe(b1.data(), 3);  // first batch sets it: (-1, 2)
  EXPECT_EQ(c.range(), std::make_pair(-1.f, 2.f));
  c.observe(b2.data(), 2);  // -1 + .5(-3+1) = -2, 2 + .5(4-2) = 3
  EXPECT_EQ(c.range(), std::make_pair(-2.f, 3.f));
  c.observe(b3.data(), 3);  // -2 + .5(0+2) = -1, 3 + .5(1-3) = 2
  EXPECT_EQ(c.range(), std::make_pair(-1.f, 2.f));
  // Default momentum 0.01, float32 arithmetic as torch.
  Calibrator d(opts(CalibMethod::MovingAverage));
  d.observe(b1.data(), 3);
  d.observe(b2.data(), 2);
  d.observe(b3.data(), 3);
  float lo = -1.f, hi = 2.f;
  const float k = 0.01f;
  lo = lo + k * (-3.f - lo);
  hi = hi + k * (4.f - hi);
  lo = lo + k * (0.f - lo);
  hi = hi + k * (1.f - hi);
  EXPECT_EQ(d.range(), std::make_pair(lo, hi));
  EXPECT_NEAR(d.range().first, -1.0098f, 1e-6);  // -1 -> -1.02 -> -1.0098
}

TEST(Calibrator, PercentileOnUniformIntegers) {
  std::vector<float> v(10000);
  for (int i = 0; i < 10000; ++i) v[i] = static_cast<float>(i);
  CalibOptions o = opts(CalibMethod::Percentile);
  o.percentile = 99;
  Calibrator c(o);
  c.observe(v.data(), 10000);
  const float bin = 9999.f / 2048;
  EXPECT_EQ(c.range().first, 0.f);  // clipped to the true min
  EXPECT_NEAR(c.range().second, 9900.f, bin);
  // Asymmetric: each tail gets 1%.
  for (int i = 0; i < 10000; ++i) v[i] = static_cast<float>(i - 5000);
  o.symmetric = false;
  o.percentile = 98;
  Calibrator a(o);
  a.observe(v.data(), 10000);
  const float abin = 2 * 5000.f / 2048;
  EXPECT_NEAR(a.range().first, -4900.f, abin);
  EXPECT_NEAR(a.range().second, 4900.f, abin);
  // 100% keeps everything exactly.
  o.percentile = 100;
  Calibrator all(o);
  all.observe(v.data(), 10000);
  EXPECT_EQ(all.range(), std::make_pair(-5000.f, 4999.f));
}

TEST(Calibrator, HistogramDoublingMatchesOnePass) {
  // Batches with growing ranges force several doublings; one batch of everything bins once.
  std::mt19937 rng(5);
  std::vector<std::vector<float>> batches;
  for (float scale : {0.01f, 0.1f, 1.f, 3.f, 50.f}) {
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<float> b(3000);
    for (float& x : b) x = u(rng);
    batches.push_back(b);
  }
  std::vector<float> all;
  for (auto& b : batches) all.insert(all.end(), b.begin(), b.end());
  for (bool sym : {true, false}) {
    for (double p : {50.0, 90.0, 99.0, 99.9}) {
      CalibOptions o = opts(CalibMethod::Percentile, sym);
      o.percentile = p;
      Calibrator streamed(o), once(o);
      for (auto& b : batches) streamed.observe(b.data(), static_cast<int64_t>(b.size()));
      once.observe(all.data(), static_cast<int64_t>(all.size()));
      EXPECT_EQ(streamed.count(), once.count());
      // Streamed and one-pass bins differ by at most one (streamed) bin.
      const float bin = 2 * 50.f * (sym ? 1 : 2) / 2048;
      EXPECT_NEAR(streamed.range().second, once.range().second, bin) << p << (sym ? " sym" : " asym");
      EXPECT_NEAR(streamed.range().first, once.range().first, bin) << p;
      EXPECT_LE(std::max(-streamed.range().first, streamed.range().second), 50.f);
    }
  }
}

TEST(Calibrator, DoublingIsExactWhenRangesAreNested) {
  // R starts at 1 and doubles to 8: identical to starting at 8 from a batch with absmax 8.
  std::vector<float> first{1.f, 0.3f, -0.7f}, second{8.f, 5.5f, 0.123f, -2.5f, 7.99f};
  CalibOptions o = opts(CalibMethod::Percentile, false);
  o.percentile = 60;
  Calibrator grown(o), direct(o);
  grown.observe(first.data(), 3);
  grown.observe(second.data(), 5);
  direct.observe(second.data(), 5);
  direct.observe(first.data(), 3);
  EXPECT_TRUE(grown.to_json()["hist"] == direct.to_json()["hist"]);  // (no 2048-number dump on failure)
  EXPECT_EQ(grown.to_json()["hist_range"], direct.to_json()["hist_range"]);
  EXPECT_EQ(grown.range(), direct.range());
}

TEST(Calibrator, EntropyClipsGaussianOutliers) {
  std::vector<float> v = gaussian(200000, 1.f, 42);
  for (int i = 0; i < 20; ++i) v.push_back(i % 2 ? 60.f : -60.f);
  for (bool sym : {true, false}) {
    Calibrator c(opts(CalibMethod::Entropy, sym));
    // Several batches so the histogram grows while observing.
    const int64_t n = static_cast<int64_t>(v.size());
    c.observe(v.data(), n / 3);
    c.observe(v.data() + n / 3, n - n / 3);
    const auto [lo, hi] = c.range();
    EXPECT_LT(hi, 60.f) << "must clip below the outliers";
    EXPECT_GT(hi, 3.f) << "must keep at least 3 sigma";
    EXPECT_LT(hi, 20.f);
    if (sym) {
      EXPECT_EQ(lo, -hi);
    }
    EXPECT_GE(lo, -60.f);
  }
}

TEST(Calibrator, MseClipsLaplacianBelowAbsmax) {
  std::mt19937 rng(9);
  std::exponential_distribution<float> ex(1.f);  // Laplace(b = 1) = random sign * Exp(1)
  std::vector<float> v(200000);
  for (float& x : v) x = (rng() & 1 ? 1.f : -1.f) * ex(rng);
  float absmax = 0;
  for (float x : v) absmax = std::max(absmax, std::fabs(x));
  // Known optimum for Laplace(b): 4 bits clips near 5.0 b, 8 bits near 9.9 b.
  CalibOptions o = opts(CalibMethod::Mse);
  o.bits = 4;
  Calibrator c4(o);
  c4.observe(v.data(), static_cast<int64_t>(v.size()));
  EXPECT_GT(c4.range().second, 4.0f);
  EXPECT_LT(c4.range().second, 6.0f);
  o.bits = 8;
  Calibrator c8(o);
  c8.observe(v.data(), static_cast<int64_t>(v.size()));
  EXPECT_GT(c8.range().second, 8.0f);
  EXPECT_LT(c8.range().second, std::min(11.5f, 0.95f * absmax));
  // Asymmetric scales both ends by the same factor.
  o.symmetric = false;
  o.bits = 4;
  Calibrator a(o);
  a.observe(v.data(), static_cast<int64_t>(v.size()));
  float mn = 0, mx = 0;
  for (float x : v) {
    mn = std::min(mn, x);
    mx = std::max(mx, x);
  }
  const auto [lo, hi] = a.range();
  EXPECT_LT(hi, mx);
  EXPECT_GT(lo, mn);
  EXPECT_NEAR(lo / mn, hi / mx, 1e-5);
  // Data without outliers (uniform) is best kept whole.
  std::vector<float> u(10000);
  for (int i = 0; i < 10000; ++i) u[i] = static_cast<float>(i) / 9999.f * 2 - 1;
  o.symmetric = true;
  o.bits = 8;
  Calibrator cu(o);
  cu.observe(u.data(), 10000);
  EXPECT_GT(cu.range().second, 0.97f);
}

TEST(Calibrator, AllZerosGiveZeroRange) {
  std::vector<float> z(100, 0.f);
  for (bool sym : {true, false})
    for (CalibMethod m : kAllMethods) {
      Calibrator c(opts(m, sym));
      c.observe(z.data(), 100);
      EXPECT_EQ(c.range(), std::make_pair(0.f, 0.f)) << calib_method_name(m);
    }
  // Zeros first, then real data: the zeros are still counted in the zero bin.
  CalibOptions o = opts(CalibMethod::Percentile);
  o.percentile = 50;
  Calibrator c(o);
  c.observe(z.data(), 100);
  std::vector<float> ones(50, 1.f);
  c.observe(ones.data(), 50);
  EXPECT_LT(c.range().second, 0.01f);  // the median of 100 zeros and 50 ones is 0
}

TEST(Calibrator, JsonRoundTripReproducesRangeExactly) {
  const std::vector<float> a = gaussian(5000, 2.f, 1), b = gaussian(3000, 7.f, 2);
  const std::vector<float> d = gaussian(1000, 30.f, 3);  // widens the histogram after the reload
  for (bool sym : {true, false})
    for (CalibMethod m : kAllMethods) {
      Calibrator c(opts(m, sym));
      c.observe(a.data(), static_cast<int64_t>(a.size()));
      c.observe(b.data(), static_cast<int64_t>(b.size()));
      const std::string text = c.to_json().dump();
      Calibrator r = Calibrator::from_json(nlohmann::json::parse(text));
      EXPECT_EQ(r.range(), c.range()) << calib_method_name(m);
      EXPECT_EQ(r.count(), c.count());
      // And it keeps observing as if never saved.
      c.observe(d.data(), static_cast<int64_t>(d.size()));
      r.observe(d.data(), static_cast<int64_t>(d.size()));
      EXPECT_EQ(r.range(), c.range()) << calib_method_name(m);
    }
  // An empty calibrator round-trips too (and still has nothing).
  Calibrator e(opts(CalibMethod::Entropy));
  EXPECT_THROW(Calibrator::from_json(nlohmann::json::parse(e.to_json().dump())).range(), Error);
}

TEST(Calibrator, JsonRejectsDamage) {
  Calibrator c(opts(CalibMethod::Percentile));
  std::vector<float> v{1.f, 2.f, -3.f};
  c.observe(v.data(), 3);
  nlohmann::json j = c.to_json();
  auto broken = [&](auto edit) {
    nlohmann::json k = j;
    edit(k);
    EXPECT_THROW(Calibrator::from_json(k), Error) << k.dump().substr(0, 120);
  };
  broken([](nlohmann::json& k) { k["version"] = 99; });
  broken([](nlohmann::json& k) { k.erase("hist"); });
  broken([](nlohmann::json& k) { k["hist"].erase(0); });
  broken([](nlohmann::json& k) { k["count"] = 4; });
  broken([](nlohmann::json& k) { k["method"] = "magic"; });
  broken([](nlohmann::json& k) { k["bins"] = "many"; });
  broken([](nlohmann::json& k) { k = nlohmann::json::array(); });
  EXPECT_NO_THROW(Calibrator::from_json(j));
}

TEST(Calibrator, ChannelRangesPerAxis) {
  const std::vector<int64_t> shape{2, 3, 4};
  std::vector<float> x(24);
  for (size_t i = 0; i < 24; ++i) x[i] = static_cast<float>((static_cast<int>(i) * 7) % 24) - 11.f;
  for (int axis : {0, 1, 2, -1}) {
    const int a = axis < 0 ? axis + 3 : axis;
    std::vector<float> lo, hi;
    channel_ranges(opts(CalibMethod::MinMax), shape, axis, x.data(), lo, hi);
    ASSERT_EQ(lo.size(), static_cast<size_t>(shape[a]));
    std::vector<float> elo(shape[a], 1e9f), ehi(shape[a], -1e9f);
    for (int64_t i0 = 0; i0 < 2; ++i0)
      for (int64_t i1 = 0; i1 < 3; ++i1)
        for (int64_t i2 = 0; i2 < 4; ++i2) {
          const int64_t idx[3] = {i0, i1, i2};
          const float v = x[(i0 * 3 + i1) * 4 + i2];
          elo[idx[a]] = std::min(elo[idx[a]], v);
          ehi[idx[a]] = std::max(ehi[idx[a]], v);
        }
    EXPECT_EQ(lo, elo) << "axis " << axis;
    EXPECT_EQ(hi, ehi) << "axis " << axis;
  }
  // Any method works per channel; percentile 100 equals min-max.
  CalibOptions p = opts(CalibMethod::Percentile);
  p.percentile = 100;
  std::vector<float> lo, hi, mlo, mhi;
  channel_ranges(p, shape, 1, x.data(), lo, hi);
  channel_ranges(opts(CalibMethod::MinMax), shape, 1, x.data(), mlo, mhi);
  EXPECT_EQ(lo, mlo);
  EXPECT_EQ(hi, mhi);
  EXPECT_THROW(channel_ranges(opts(CalibMethod::MinMax), shape, 3, x.data(), lo, hi), Error);
  std::vector<float> nan(4, std::nanf(""));
  EXPECT_THROW(channel_ranges(opts(CalibMethod::MinMax), {2, 2}, 0, nan.data(), lo, hi), Error);
}

}  // namespace
