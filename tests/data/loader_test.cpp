#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "joule/data/loader.h"

using namespace joule;
using namespace joule::data;
using namespace std::chrono_literals;

namespace {

// Sample i carries i as its label and value; optionally slow, optionally throwing at one index.
class CountingDataset : public Dataset {
 public:
  explicit CountingDataset(size_t n, std::chrono::microseconds delay = 0us, size_t throw_at = SIZE_MAX)
      : n_(n), delay_(delay), throw_at_(throw_at) {}
  size_t size() const override { return n_; }
  bool has_labels() const override { return true; }
  std::string describe() const override { return "counting"; }
  Sample get(size_t i) const override {
    ++calls;
    if (delay_.count()) std::this_thread::sleep_for(delay_ * ((i * 7) % 3));  // uneven timing
    if (i == throw_at_) throw std::runtime_error("boom at " + std::to_string(i));
    Sample s;
    s.input = Tensor::from_vector<float>({static_cast<float>(i)}, {1});
    s.label = static_cast<int64_t>(i);
    return s;
  }
  mutable std::atomic<size_t> calls{0};

 private:
  size_t n_;
  std::chrono::microseconds delay_;
  size_t throw_at_;
};

}  // namespace

TEST(Loader, OrderPreservedAcrossPrefetchSizes) {
  CountingDataset d(40, 200us);
  for (size_t prefetch : {1, 16}) {
    Loader loader(d, 3, 30, prefetch);
    for (int64_t want = 3; want < 33; ++want) {
      auto s = loader.next();
      ASSERT_TRUE(s.has_value()) << "prefetch " << prefetch << " ended early at " << want;
      EXPECT_EQ(s->label, want);
      EXPECT_EQ(s->input.data<float>()[0], static_cast<float>(want));
    }
    EXPECT_FALSE(loader.next().has_value());
    EXPECT_FALSE(loader.next().has_value());
  }
}

TEST(Loader, RangeIsClampedToTheDataset) {
  CountingDataset d(10);
  Loader tail(d, 8, 100);
  EXPECT_EQ(tail.next()->label, 8);
  EXPECT_EQ(tail.next()->label, 9);
  EXPECT_FALSE(tail.next().has_value());
  Loader past(d, 50, 5);
  EXPECT_FALSE(past.next().has_value());
}

TEST(Loader, PrefetchBoundsReadAhead) {
  CountingDataset d(1000);
  Loader loader(d, 0, 1000, 4);
  ASSERT_TRUE(loader.next().has_value());
  std::this_thread::sleep_for(50ms);
  // One taken, four queued, at most one more in flight.
  EXPECT_LE(d.calls.load(), 6u);
  EXPECT_GE(d.calls.load(), 5u);
}

TEST(Loader, EarlyDestructionDoesNotHang) {
  CountingDataset d(1000000, 1000us);
  const auto start = std::chrono::steady_clock::now();
  {
    Loader never_read(d, 0, d.size());
  }
  {
    Loader partly_read(d, 0, d.size(), 16);
    ASSERT_TRUE(partly_read.next().has_value());
    ASSERT_TRUE(partly_read.next().has_value());
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_LT(d.calls.load(), 100u);
}

TEST(Loader, ExceptionFromGetSurfacesInNext) {
  CountingDataset d(20, 0us, 5);
  Loader loader(d, 0, 20, 16);
  for (int64_t want = 0; want < 5; ++want) EXPECT_EQ(loader.next()->label, want);  // earlier samples first
  try {
    loader.next();
    ADD_FAILURE() << "expected the dataset's exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "boom at 5");
  }
  EXPECT_FALSE(loader.next().has_value());
}
