#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <filesystem>
#include <set>

#include "joule/core/file_util.h"
#include "joule/core/npy.h"
#include "joule/core/tensor.h"
#include "joule/core/thread_pool.h"

using namespace joule;

TEST(Half, EveryBitPatternRoundTrips) {
  for (uint32_t b = 0; b < 65536; ++b) {
    Half h;
    h.bits = static_cast<uint16_t>(b);
    float f = static_cast<float>(h);
    if (std::isnan(f)) continue;
    EXPECT_EQ(Half(f).bits, h.bits) << "bits " << b;
  }
}

TEST(Half, RoundsToNearestEvenAndSaturatesToInf) {
  EXPECT_EQ(static_cast<float>(Half(1.0f + 1.0f / 2048)), 1.0f);             // tie -> even
  EXPECT_EQ(static_cast<float>(Half(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);  // tie -> even (up)
  EXPECT_TRUE(std::isinf(static_cast<float>(Half(70000.f))));
  EXPECT_EQ(static_cast<float>(Half(65504.f)), 65504.f);
  EXPECT_EQ(static_cast<float>(Half(5.96046448e-08f)), 5.96046448e-08f);  // smallest subnormal
}

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f)), 1.0f);
  EXPECT_EQ(static_cast<float>(BFloat16(1.00390625f)), 1.0f);        // tie -> even
  EXPECT_EQ(static_cast<float>(BFloat16(1.01171875f)), 1.015625f);   // tie -> even (up)
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::nanf("")))));
}

// The bulk conversion (F16C on x86 CPUs that have it) gives the scalar constructors' bits on
// every float whose top 19 bits vary (all exponents, subnormal halves, overflow, ties) and on
// random ones; NaN stays NaN.
TEST(Half, BulkConversionEqualsTheScalarOneBitForBit) {
  std::vector<float> x;
  for (uint32_t hi = 0; hi < (1u << 19); ++hi) {
    for (uint32_t lo : {0u, 0xfffu, 0x1000u, 0x1001u, 0x1fffu}) {  // below, at and past a half's rounding point
      const uint32_t b = (hi << 13) | lo;
      float f;
      std::memcpy(&f, &b, 4);
      x.push_back(f);
    }
  }
  x.push_back(std::nanf(""));
  x.push_back(-std::numeric_limits<float>::infinity());
  for (DType to : {DType::Float16, DType::BFloat16}) {
    std::vector<uint16_t> y(x.size());
    to_half_bits(x.data(), y.data(), static_cast<int64_t>(x.size()), to);
    size_t wrong = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const uint16_t want = to == DType::Float16 ? Half(x[i]).bits : BFloat16(x[i]).bits;
      if (std::isnan(x[i])) {
        Half h;
        h.bits = y[i];
        BFloat16 b;
        b.bits = y[i];
        wrong += !std::isnan(to == DType::Float16 ? static_cast<float>(h) : static_cast<float>(b));
      } else {
        wrong += y[i] != want;
      }
    }
    EXPECT_EQ(wrong, 0u) << dtype_name(to);
  }
}

TEST(DType, OnnxCodesRoundTrip) {
  for (int code = 0; code < 20; ++code) {
    DType t = dtype_from_onnx(code);
    if (t != DType::Undefined) {
      EXPECT_EQ(dtype_to_onnx(t), code);
    }
  }
  EXPECT_EQ(dtype_from_onnx(8), DType::String);
  EXPECT_EQ(dtype_from_onnx(14), DType::Undefined);  // complex64
  EXPECT_EQ(dtype_from_name("int64"), DType::Int64);
}

TEST(Tensor, ReshapeSharesCloneCopies) {
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor r = t.reshaped({3, 2});
  r.data<float>()[0] = 9;
  EXPECT_EQ(t.data<float>()[0], 9);
  Tensor c = t.clone();
  c.data<float>()[1] = 7;
  EXPECT_EQ(t.data<float>()[1], 2);
  EXPECT_THROW(t.reshaped({4, 2}), Error);
  EXPECT_THROW(t.data<int64_t>(), Error);
  EXPECT_EQ(t.describe(), "float32[2,3]");
}

TEST(Tensor, CastSaturatesAndConverts) {
  Tensor t = Tensor::from_vector<float>({-1.5f, 0.f, 2.7f, 1e20f}, {4});
  Tensor i = t.cast(DType::Int32);
  EXPECT_EQ(i.data<int32_t>()[0], -1);
  EXPECT_EQ(i.data<int32_t>()[2], 2);
  EXPECT_EQ(i.data<int32_t>()[3], std::numeric_limits<int32_t>::max());
  Tensor b = t.cast(DType::Bool);
  EXPECT_FALSE(b.data<bool>()[1]);
  EXPECT_TRUE(b.data<bool>()[0]);
  EXPECT_EQ(t.cast(DType::Float16).value_as_double(2), static_cast<double>(static_cast<float>(Half(2.7f))));
}

TEST(Npy, RoundTripEveryDtype) {
  auto dir = std::filesystem::temp_directory_path() / "joule_npy_test";
  std::filesystem::create_directories(dir);
  for (DType t : {DType::Float32, DType::Float64, DType::Int8, DType::Int16, DType::Int32, DType::Int64,
                  DType::UInt8, DType::Bool, DType::Float16}) {
    Tensor x = Tensor::from_vector<float>({0, 1, 0, 3, 4, 5}, {2, 1, 3}).cast(t);
    std::string p = (dir / (std::string(dtype_name(t)) + ".npy")).string();
    save_npy(x, p);
    Tensor y = load_npy(p);
    EXPECT_EQ(y.dtype(), t);
    EXPECT_EQ(y.shape(), x.shape());
    EXPECT_EQ(0, std::memcmp(x.raw(), y.raw(), x.nbytes()));
  }
  Tensor s = Tensor::scalar<float>(3.5f);
  save_npy(s, (dir / "s.npy").string());
  EXPECT_EQ(load_npy((dir / "s.npy").string()).shape(), Shape{});
  std::filesystem::remove_all(dir);
}

TEST(Npy, BadFilesAreClearErrors) {
  EXPECT_THROW(parse_npy("hello", "x.npy"), Error);
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {4});
  auto p = std::filesystem::temp_directory_path() / "joule_trunc.npy";
  save_npy(x, p.string());
  std::string bytes = read_file(p.string());
  try {
    parse_npy(bytes.substr(0, bytes.size() - 3), "t.npy");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos);
  }
  EXPECT_THROW(load_npy("/nonexistent/file.npy"), Error);
  std::filesystem::remove(p);
}

TEST(ThreadPool, CoversEveryIndexOnceAndNests) {
  ThreadPool pool(3);
  for (int64_t n : {1, 2, 3, 7, 1000}) {
    std::vector<int> hits(static_cast<size_t>(n), 0);
    pool.parallel_for(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
      pool.parallel_for(2, [](int64_t, int64_t) {});  // nested: runs serially, no deadlock
    });
    for (int h : hits) EXPECT_EQ(h, 1);
  }
}
