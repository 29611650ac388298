#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>

#include "data_test_util.h"
#include "expect_error.h"
#include "joule/data/dataset.h"

using namespace joule;
using namespace joule::data;
using joule::data::testing::TempDir;
using joule::data::testing::write_bytes;
using joule::data::testing::expect_error;

namespace {

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::string idx_images(uint32_t n, uint32_t h, uint32_t w, const std::vector<uint8_t>& px) {
  return be32(0x803) + be32(n) + be32(h) + be32(w) + std::string(px.begin(), px.end());
}

std::string idx_labels(const std::vector<uint8_t>& labels) {
  return be32(0x801) + be32(static_cast<uint32_t>(labels.size())) + std::string(labels.begin(), labels.end());
}

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(f);
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// 3 images of 2x4 with distinct pixels.
std::vector<uint8_t> pixels() {
  std::vector<uint8_t> px(24);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i * 11);
  px[5] = 255;
  return px;
}

Preprocess shape(Shape s) {
  Preprocess p;
  p.sample_shape = std::move(s);
  return p;
}

}  // namespace

TEST(IdxDataset, RawFileValuesAndLabelsAreExact) {
  TempDir tmp;
  const auto px = pixels();
  write_bytes(tmp / "train-images-idx3-ubyte", idx_images(3, 2, 4, px));
  write_bytes(tmp / "train-labels-idx1-ubyte", idx_labels({7, 0, 3}));
  auto d = open_dataset(tmp / "train-images-idx3-ubyte", shape({1, 2, 4}));
  ASSERT_EQ(d->size(), 3u);
  ASSERT_TRUE(d->has_labels());
  const std::vector<int64_t> labels = {7, 0, 3};
  for (size_t i = 0; i < 3; ++i) {
    Sample s = d->get(i);
    EXPECT_TRUE(s.error.empty());
    EXPECT_EQ(s.label, labels[i]);
    ASSERT_EQ(s.input.shape(), (Shape{1, 2, 4}));
    for (int j = 0; j < 8; ++j)
      EXPECT_FLOAT_EQ(s.input.data<float>()[j], px[i * 8 + j] / 255.0f) << i << "," << j;
  }
  EXPECT_EQ(d->describe(), "IDX " + (tmp / "train-images-idx3-ubyte") + ": 3 samples 2x4, labels 8 classes");
}

TEST(IdxDataset, GzipFilesWithMeanStdAndFlatOrTwoDimShapes) {
  TempDir tmp;
  const auto px = pixels();
  write_gz(tmp / "t10k-images-idx3-ubyte.gz", idx_images(3, 2, 4, px));
  write_gz(tmp / "t10k-labels-idx1-ubyte.gz", idx_labels({1, 2, 9}));
  Preprocess p = shape({8});  // an MLP's flat input
  p.mean = {0.5f};
  p.std = {0.25f};
  auto d = open_dataset(tmp / "t10k-images-idx3-ubyte.gz", p);
  ASSERT_EQ(d->size(), 3u);
  Sample s = d->get(2);
  EXPECT_EQ(s.label, 9);
  ASSERT_EQ(s.input.shape(), (Shape{8}));
  for (int j = 0; j < 8; ++j) EXPECT_NEAR(s.input.data<float>()[j], (px[16 + j] / 255.0f - 0.5f) / 0.25f, 1e-6);
  auto two_dim = open_dataset(tmp / "t10k-images-idx3-ubyte.gz", shape({2, 4}));
  EXPECT_EQ(two_dim->get(0).input.shape(), (Shape{2, 4}));
}

TEST(IdxDataset, NoLabelsFileMeansNoLabels) {
  TempDir tmp;
  write_bytes(tmp / "x-images-idx3-ubyte", idx_images(3, 2, 4, pixels()));
  auto d = open_dataset(tmp / "x-images-idx3-ubyte", shape({1, 2, 4}));
  EXPECT_FALSE(d->has_labels());
  EXPECT_EQ(d->get(0).label, -1);
  EXPECT_NE(d->describe().find("no labels"), std::string::npos);
}

TEST(IdxDataset, BrokenFilesFailNamingThePath) {
  TempDir tmp;
  const std::string full = idx_images(3, 2, 4, pixels());
  const std::string truncated = tmp / "cut-images-idx3-ubyte";
  write_bytes(truncated, full.substr(0, full.size() - 5));
  expect_error([&] { open_dataset(truncated, shape({1, 2, 4})); }, {truncated, "truncated"});

  const std::string cut_gz = tmp / "cutgz-images-idx3-ubyte.gz";
  write_gz(tmp / "whole.gz", full);
  const std::string gz = read_all(tmp / "whole.gz");
  write_bytes(cut_gz, gz.substr(0, gz.size() / 2));
  expect_error([&] { open_dataset(cut_gz, shape({1, 2, 4})); }, {cut_gz, "truncated"});
  // Only the CRC/size trailer missing: every pixel is there, but the download was still cut short.
  write_bytes(cut_gz, gz.substr(0, gz.size() - 6));
  expect_error([&] { open_dataset(cut_gz, shape({1, 2, 4})); }, {cut_gz, "truncated gzip"});
  write_bytes(cut_gz, gz.substr(0, 20) + std::string(10, '\x55') + gz.substr(30));
  expect_error([&] { open_dataset(cut_gz, shape({1, 2, 4})); }, {cut_gz});

  const std::string bad_magic = tmp / "bad-images-idx3-ubyte";
  write_bytes(bad_magic, std::string("\x00\x00\x08\x01", 4) + full.substr(4));
  expect_error([&] { open_dataset(bad_magic, shape({1, 2, 4})); }, {bad_magic, "magic"});

  const std::string short_header = tmp / "hdr-images-idx3-ubyte";
  write_bytes(short_header, full.substr(0, 9));
  expect_error([&] { open_dataset(short_header, shape({1, 2, 4})); }, {short_header});
}

TEST(IdxDataset, LabelCountMismatchNamesBothFiles) {
  TempDir tmp;
  write_bytes(tmp / "a-images-idx3-ubyte", idx_images(3, 2, 4, pixels()));
  write_bytes(tmp / "a-labels-idx1-ubyte", idx_labels({1, 2}));
  expect_error([&] { open_dataset(tmp / "a-images-idx3-ubyte", shape({1, 2, 4})); },
               {tmp / "a-images-idx3-ubyte", tmp / "a-labels-idx1-ubyte", "2 labels", "3 images"});
}

TEST(IdxDataset, ShapeMismatchNamesPathAndShapes) {
  TempDir tmp;
  write_bytes(tmp / "a-images-idx3-ubyte", idx_images(3, 2, 4, pixels()));
  expect_error([&] { open_dataset(tmp / "a-images-idx3-ubyte", shape({1, 4, 2})); },
               {tmp / "a-images-idx3-ubyte", "2x4", "[1,4,2]"});
  expect_error([&] { open_dataset(tmp / "a-images-idx3-ubyte", shape({3, 2, 4})); }, {"[3,2,4]"});
  Preprocess p = shape({1, 2, 4});
  p.mean = {0.1f, 0.2f};
  expect_error([&] { open_dataset(tmp / "a-images-idx3-ubyte", p); }, {"mean/std"});
}

TEST(IdxDataset, DirectorySpecPicksSplit) {
  TempDir tmp;
  write_bytes(tmp / "train-images-idx3-ubyte", idx_images(3, 2, 4, pixels()));
  write_bytes(tmp / "train-labels-idx1-ubyte", idx_labels({1, 1, 1}));
  write_gz(tmp / "t10k-images-idx3-ubyte.gz", idx_images(2, 2, 4, std::vector<uint8_t>(16, 9)));
  write_gz(tmp / "t10k-labels-idx1-ubyte.gz", idx_labels({4, 5}));
  const std::string dir = tmp.path().string();
  EXPECT_EQ(open_dataset(dir + ":train", shape({1, 2, 4}))->size(), 3u);
  auto test = open_dataset(dir + ":test", shape({1, 2, 4}));
  EXPECT_EQ(test->size(), 2u);
  EXPECT_EQ(test->get(1).label, 5);
  expect_error([&] { open_dataset(dir, shape({1, 2, 4})); }, {dir + ":train", dir + ":test"});
  expect_error([&] { open_dataset(dir + ":valid", shape({1, 2, 4})); }, {dir + ":valid"});
}

TEST(IdxDataset, UnknownSpecsFail) {
  TempDir tmp;
  expect_error([&] { open_dataset(tmp / "missing.npy", shape({1})); }, {tmp / "missing.npy", "no such"});
  std::filesystem::create_directories(tmp / "empty");
  expect_error([&] { open_dataset(tmp / "empty", shape({1})); }, {tmp / "empty"});
  write_bytes(tmp / "notes.txt", "hello world, not a dataset");
  expect_error([&] { open_dataset(tmp / "notes.txt", shape({1})); }, {tmp / "notes.txt"});
}

TEST(IdxDataset, FashionMnistTestSet) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  const std::string file = dir + "/t10k-images-idx3-ubyte.gz";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not installed";
  auto d = open_dataset(file, shape({1, 28, 28}));
  ASSERT_EQ(d->size(), 10000u);
  EXPECT_EQ(d->describe(), "IDX " + file + ": 10000 samples 28x28, labels 10 classes");
  std::vector<int> counts(10);
  for (size_t i = 0; i < d->size(); ++i) {
    const int64_t l = d->get(i).label;
    ASSERT_TRUE(l >= 0 && l < 10) << l;
    ++counts[l];
  }
  for (int c : counts) EXPECT_EQ(c, 1000);  // the test set is balanced
  Sample s = d->get(0);
  float lo = 1, hi = 0;
  for (int j = 0; j < 784; ++j) {
    lo = std::min(lo, s.input.data<float>()[j]);
    hi = std::max(hi, s.input.data<float>()[j]);
  }
  EXPECT_EQ(lo, 0.0f);
  EXPECT_LE(hi, 1.0f);
  EXPECT_GT(hi, 0.5f);

  EXPECT_EQ(open_dataset(dir + ":test", shape({1, 28, 28}))->size(), 10000u);
  expect_error([&] { open_dataset(dir, shape({1, 28, 28})); }, {dir + ":train", dir + ":test"});
}
