#include <gtest/gtest.h>

#include <filesystem>

#include "data_test_util.h"
#include "expect_error.h"
#include "joule/core/npy.h"
#include "joule/data/dataset.h"

using namespace joule;
using namespace joule::data;
using joule::data::testing::expect_error;
using joule::data::testing::TempDir;

namespace {

Preprocess shape(Shape s) {
  Preprocess p;
  p.sample_shape = std::move(s);
  return p;
}

Tensor iota_u8(Shape s) {
  Tensor t(DType::UInt8, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(i * 7 % 256);
  return t;
}

}  // namespace

TEST(NpyDataset, Float32IsUsedAsIsEvenWithMeanStd) {
  TempDir tmp;
  Tensor x(DType::Float32, {3, 1, 2, 2});
  for (int i = 0; i < 12; ++i) x.data<float>()[i] = -1.5f + 0.37f * i;
  save_npy(x, tmp / "x.npy");
  Preprocess p = shape({1, 2, 2});
  p.mean = {0.5f};
  p.std = {2.0f};
  auto d = open_dataset(tmp / "x.npy", p);
  ASSERT_EQ(d->size(), 3u);
  EXPECT_FALSE(d->has_labels());
  Sample s = d->get(2);
  EXPECT_EQ(s.label, -1);
  ASSERT_EQ(s.input.shape(), (Shape{1, 2, 2}));
  for (int j = 0; j < 4; ++j) EXPECT_EQ(s.input.data<float>()[j], x.data<float>()[8 + j]);
}

TEST(NpyDataset, Uint8GetsScaleAndPerChannelMeanStd) {
  TempDir tmp;
  Tensor x = iota_u8({2, 3, 1, 2});
  save_npy(x, tmp / "img.npy");
  Preprocess p = shape({3, 1, 2});
  p.mean = {0.1f, 0.2f, 0.3f};
  p.std = {0.5f, 0.25f, 2.0f};
  auto d = open_dataset(tmp / "img.npy", p);
  Sample s = d->get(1);
  for (int c = 0; c < 3; ++c)
    for (int j = 0; j < 2; ++j) {
      const float px = x.data<uint8_t>()[6 + c * 2 + j];
      EXPECT_NEAR(s.input.data<float>()[c * 2 + j], (px / 255.0f - p.mean[c]) / p.std[c], 1e-6)
          << c << "," << j;
    }
}

TEST(NpyDataset, LeadingOneIsTolerated) {
  TempDir tmp;
  save_npy(iota_u8({4, 28, 28}), tmp / "missing_one.npy");  // N x 28 x 28 for [1,28,28]
  auto d = open_dataset(tmp / "missing_one.npy", shape({1, 28, 28}));
  EXPECT_EQ(d->get(3).input.shape(), (Shape{1, 28, 28}));
  EXPECT_FLOAT_EQ(d->get(1).input.data<float>()[5], static_cast<float>((784 + 5) * 7 % 256) / 255.0f);

  save_npy(iota_u8({4, 1, 28, 28}), tmp / "extra_one.npy");  // N x 1 x 28 x 28 for [28,28]
  EXPECT_EQ(open_dataset(tmp / "extra_one.npy", shape({28, 28}))->get(0).input.shape(), (Shape{28, 28}));
}

TEST(NpyDataset, ShapeMismatchNamesBothShapes) {
  TempDir tmp;
  save_npy(iota_u8({2, 1, 1, 28, 28}), tmp / "two_ones.npy");
  expect_error([&] { open_dataset(tmp / "two_ones.npy", shape({1, 28, 28})); },
               {tmp / "two_ones.npy", "[1,1,28,28]", "[1,28,28]"});
  save_npy(iota_u8({2, 28, 27}), tmp / "narrow.npy");
  expect_error([&] { open_dataset(tmp / "narrow.npy", shape({1, 28, 28})); }, {"[28,27]", "[1,28,28]"});
  save_npy(Tensor(DType::Int16, {2, 3}), tmp / "int16.npy");
  expect_error([&] { open_dataset(tmp / "int16.npy", shape({3})); }, {tmp / "int16.npy", "int16"});
}

TEST(NpyDataset, LabelSiblingVariants) {
  TempDir tmp;
  struct Case {
    std::string dir, labels_name;
    DType dtype;
  };
  const std::vector<Case> cases = {{"a", "x_labels.npy", DType::Int64},
                                   {"b", "x.labels.npy", DType::Int32},
                                   {"c", "labels.npy", DType::UInt8}};
  for (const auto& c : cases) {
    std::filesystem::create_directories(tmp / c.dir);
    save_npy(iota_u8({3, 4}), tmp / (c.dir + "/x.npy"));
    save_npy(Tensor::from_vector<int64_t>({2, 0, 5}, {3}).cast(c.dtype), tmp / (c.dir + "/" + c.labels_name));
    auto d = open_dataset(tmp / (c.dir + "/x.npy"), shape({4}));
    ASSERT_TRUE(d->has_labels()) << c.labels_name;
    EXPECT_EQ(d->get(0).label, 2) << c.labels_name;
    EXPECT_EQ(d->get(2).label, 5) << c.labels_name;
    EXPECT_NE(d->describe().find(c.labels_name), std::string::npos) << d->describe();
  }
  // The most specific name wins when several exist.
  save_npy(Tensor::from_vector<int64_t>({9, 9, 9}, {3}), tmp / "a/labels.npy");
  EXPECT_EQ(open_dataset(tmp / "a/x.npy", shape({4}))->get(0).label, 2);
}

TEST(NpyDataset, LabelProblemsNameBothFiles) {
  TempDir tmp;
  save_npy(iota_u8({3, 4}), tmp / "x.npy");
  save_npy(Tensor::from_vector<int64_t>({1, 2}, {2}), tmp / "x_labels.npy");
  expect_error([&] { open_dataset(tmp / "x.npy", shape({4})); }, {tmp / "x.npy", tmp / "x_labels.npy"});
  save_npy(Tensor::from_vector<float>({1, 2, 3}, {3}), tmp / "x_labels.npy");
  expect_error([&] { open_dataset(tmp / "x.npy", shape({4})); }, {tmp / "x_labels.npy", "integers"});
}
