#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <thread>

#include "data_test_util.h"
#include "expect_error.h"
#include "joule/data/dataset.h"
#include "joule/data/image.h"

using namespace joule;
using namespace joule::data;
using namespace joule::data::testing;

namespace {

Preprocess image_shape(int c, int h, int w, int resize = 0) {
  Preprocess p;
  p.sample_shape = {c, h, w};
  p.resize = resize;
  return p;
}

float at(const Tensor& t, int c, int y, int x) {
  return t.data<float>()[(static_cast<int64_t>(c) * t.dim(1) + y) * t.dim(2) + x];
}

// Gray image, 0 where `dark(x, y)`, else 255.
std::string two_tone(int w, int h, bool (*dark)(int, int)) {
  std::vector<uint8_t> px(static_cast<size_t>(w) * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) px[static_cast<size_t>(y) * w + x] = dark(x, y) ? 0 : 255;
  return encode_jpeg(px, w, h, 1);
}

}  // namespace

TEST(ImageFolder, ClassesSortedLabelsFollowFolders) {
  TempDir tmp;
  const std::string jpg = encode_jpeg(solid(16, 16, {10, 20, 30}), 16, 16, 3);
  for (const char* f : {"zebra/b.JPG", "zebra/a.jpeg", "apple/x.jpg", "Mango/m.Jpeg"})
    write_bytes(tmp / f, jpg);
  write_bytes(tmp / "apple/notes.txt", "ignored");
  write_bytes(tmp / "apple/y.png", "ignored");
  write_bytes(tmp / "top-level.jpg", jpg);  // not in a class folder: ignored
  std::filesystem::create_directories(tmp / "empty_class");
  std::filesystem::create_directories(tmp / ".hidden");
  auto d = open_dataset(tmp.path().string(), image_shape(3, 8, 8));
  EXPECT_EQ(d->class_names(), (std::vector<std::string>{"Mango", "apple", "empty_class", "zebra"}));
  ASSERT_EQ(d->size(), 4u);
  EXPECT_TRUE(d->has_labels());
  const std::vector<int64_t> labels = {0, 1, 3, 3};  // Mango/m, apple/x, zebra/a, zebra/b
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(d->get(i).label, labels[i]) << i;
  EXPECT_NE(d->describe().find("4 images in 4 classes, resize 9 crop 8x8"), std::string::npos) << d->describe();
}

TEST(ImageFolder, SolidColourDecodesToItsColourWithMeanStd) {
  TempDir tmp;
  write_bytes(tmp / "c/solid.jpg", encode_jpeg(solid(64, 48, {200, 30, 90}), 64, 48, 3));
  Preprocess p = image_shape(3, 32, 32);
  auto d = open_dataset(tmp.path().string(), p);
  Sample s = d->get(0);
  ASSERT_TRUE(s.error.empty()) << s.error;
  ASSERT_EQ(s.input.shape(), (Shape{3, 32, 32}));
  const float rgb[3] = {200, 30, 90};
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 32; y += 7)
      for (int x = 0; x < 32; x += 5) EXPECT_NEAR(at(s.input, c, y, x), rgb[c] / 255, 3.0 / 255) << c;

  p.mean = {0.485f, 0.456f, 0.406f};
  p.std = {0.229f, 0.224f, 0.225f};
  Sample n = open_dataset(tmp.path().string(), p)->get(0);
  for (int c = 0; c < 3; ++c)
    EXPECT_NEAR(at(n.input, c, 10, 10), (at(s.input, c, 10, 10) - p.mean[c]) / p.std[c], 1e-5);
}

TEST(ImageFolder, GrayPath) {
  TempDir tmp;
  write_bytes(tmp / "a/colour.jpg", encode_jpeg(solid(32, 32, {200, 30, 90}), 32, 32, 3));
  write_bytes(tmp / "b/gray.jpg", encode_jpeg(solid(32, 32, {77}), 32, 32, 1));
  auto gray = open_dataset(tmp.path().string(), image_shape(1, 16, 16));
  // Colour -> gray is the JPEG's luma: 0.299 R + 0.587 G + 0.114 B.
  EXPECT_NEAR(at(gray->get(0).input, 0, 8, 8), (0.299 * 200 + 0.587 * 30 + 0.114 * 90) / 255, 3.0 / 255);
  EXPECT_NEAR(at(gray->get(1).input, 0, 8, 8), 77.0 / 255, 2.0 / 255);
  auto rgb = open_dataset(tmp.path().string(), image_shape(3, 16, 16));
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(at(rgb->get(1).input, c, 3, 3), 77.0 / 255, 2.0 / 255);
}

TEST(ImageFolder, ResizeAndCentreCropGeometry) {
  TempDir tmp;
  // Landscape 200x100, dark for x < 120. Shorter side 100 -> 50 gives 100x50; the centre crop 50x50
  // starts at column 25, so crop columns < 35 are dark (resized x < 60) and the rest bright.
  write_bytes(tmp / "a/landscape.jpg", two_tone(200, 100, [](int x, int) { return x < 120; }));
  // Portrait 100x200, dark for y < 120: the same along rows.
  write_bytes(tmp / "b/portrait.jpg", two_tone(100, 200, [](int, int y) { return y < 120; }));
  auto d = open_dataset(tmp.path().string(), image_shape(1, 50, 50, 50));
  const Tensor land = d->get(0).input, port = d->get(1).input;
  for (int i = 0; i < 50; ++i) {
    for (int j = 0; j < 50; j += 7) {
      const float expect = i < 35 ? 0.0f : 1.0f;
      if (std::abs(i - 35) <= 1) continue;  // the edge itself is blended
      EXPECT_NEAR(at(land, 0, j, i), expect, 0.03) << "landscape column " << i;
      EXPECT_NEAR(at(port, 0, i, j), expect, 0.03) << "portrait row " << i;
    }
  }
  // The blended edge pixel lies between the two.
  EXPECT_GT(at(land, 0, 10, 35), 0.05);
}

TEST(ImageFolder, StrongShrinkIsAntialiased) {
  TempDir tmp;
  // Dark lines at x and y = 3, 4 (mod 8), shrunk 8x: plain bilinear samples exactly those pixels
  // (output pixel k samples input 8k+3.5) and gives black; area averaging gives the bright fraction
  // (6/8)^2 = 0.5625.
  auto dark = [](int x, int y) { return x % 8 == 3 || x % 8 == 4 || y % 8 == 3 || y % 8 == 4; };
  write_bytes(tmp / "a/grid.jpg", two_tone(400, 400, dark));
  auto d = open_dataset(tmp.path().string(), image_shape(1, 50, 50, 50));
  const Tensor t = d->get(0).input;
  // Away from the border, where the kernel is cut off and renormalised.
  for (int y = 1; y < 49; y += 3)
    for (int x = 1; x < 49; x += 3) EXPECT_NEAR(at(t, 0, y, x), 0.5625, 0.04) << y << "," << x;
}

TEST(ImageFolder, EnlargingIsBilinear) {
  // Direct check of the resampler: a 2x1 ramp [0, 200] enlarged to 4x1 gives PIL's bilinear values.
  Image in;
  in.width = 2, in.height = 1, in.channels = 1, in.pixels = {0, 200};
  Image out = resize_crop(in, 4, 1, 0, 0, 4, 1);
  EXPECT_EQ(out.pixels, (std::vector<uint8_t>{0, 50, 150, 200}));
  // Crop window only: columns 1..2 of the same resize.
  EXPECT_EQ(resize_crop(in, 4, 1, 1, 0, 2, 1).pixels, (std::vector<uint8_t>{50, 150}));
}

TEST(ImageFolder, CorruptFilesBecomeSampleErrors) {
  TempDir tmp;
  // Busy pixels so that half the file ends inside the entropy-coded data, not the headers.
  std::vector<uint8_t> px(96 * 96 * 3);
  for (size_t j = 0; j < px.size(); ++j) px[j] = static_cast<uint8_t>(j * 31 % 256);
  const std::string good = encode_jpeg(px, 96, 96, 3);
  write_bytes(tmp / "a/1good.jpg", good);
  write_bytes(tmp / "a/2text.jpg", "this is not a jpeg at all");
  write_bytes(tmp / "a/3truncated.jpg", good.substr(0, good.size() / 2));
  write_bytes(tmp / "a/4empty.jpg", "");
  write_bytes(tmp / "a/5header_only.jpg", good.substr(0, 20));
  write_bytes(tmp / "b/6good.jpg", good);
  auto d = open_dataset(tmp.path().string(), image_shape(3, 16, 16));
  ASSERT_EQ(d->size(), 6u);
  for (size_t i : {0u, 5u}) {
    Sample s = d->get(i);
    EXPECT_TRUE(s.error.empty()) << s.error;
    EXPECT_TRUE(s.input.defined());
  }
  for (const char* name : {"a/2text.jpg", "a/3truncated.jpg", "a/4empty.jpg", "a/5header_only.jpg"}) {
    const size_t i = static_cast<size_t>(name[2] - '1');
    Sample s = d->get(i);
    EXPECT_NE(s.error.find(tmp / name), std::string::npos) << "'" << s.error << "'";
    EXPECT_FALSE(s.input.defined()) << name;
    EXPECT_EQ(s.label, 0) << name;
  }
  EXPECT_NE(d->get(2).error.find("truncated"), std::string::npos) << d->get(2).error;
}

TEST(ImageFolder, CmykJpegDecodes) {
  TempDir tmp;
  // Adobe CMYK as libjpeg stores it (inverted): (255, 128, 255, 255) is R=255, G~128, B=255.
  write_bytes(tmp / "a/cmyk.jpg", encode_jpeg(solid(16, 16, {255, 128, 255, 255}), 16, 16, 4));
  Sample s = open_dataset(tmp.path().string(), image_shape(3, 8, 8))->get(0);
  ASSERT_TRUE(s.error.empty()) << s.error;
  EXPECT_NEAR(at(s.input, 0, 4, 4), 1.0, 3.0 / 255);
  EXPECT_NEAR(at(s.input, 1, 4, 4), 128.0 / 255, 3.0 / 255);
  EXPECT_NEAR(at(s.input, 2, 4, 4), 1.0, 3.0 / 255);
}

TEST(ImageFolder, ConcurrentGetsMatchSequential) {
  TempDir tmp;
  for (int i = 0; i < 8; ++i) {
    std::vector<uint8_t> px(48 * 40 * 3);
    for (size_t j = 0; j < px.size(); ++j) px[j] = static_cast<uint8_t>(j * (i + 3) % 251);
    const std::string name = "c" + std::to_string(i % 3) + "/" + std::to_string(i) + ".jpg";
    write_bytes(tmp / name, encode_jpeg(px, 48, 40, 3));
  }
  auto d = open_dataset(tmp.path().string(), image_shape(3, 24, 24));
  std::vector<Tensor> seq;
  for (size_t i = 0; i < d->size(); ++i) seq.push_back(d->get(i).input);
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 5; ++rep)
        for (size_t i = 0; i < d->size(); ++i) {
          Tensor x = d->get((i + t) % d->size()).input;
          if (std::memcmp(x.raw(), seq[(i + t) % d->size()].raw(), x.nbytes()) != 0) ++mismatches[t];
        }
    });
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

TEST(ImageFolder, BadSetupsFail) {
  TempDir tmp;
  std::filesystem::create_directories(tmp / "no_images/cls");
  write_bytes(tmp / "no_images/cls/readme.txt", "x");
  expect_error([&] { open_dataset(tmp / "no_images", image_shape(3, 8, 8)); }, {tmp / "no_images", "no .jpg"});
  write_bytes(tmp / "ok/cls/a.jpg", encode_jpeg(solid(8, 8, {1, 2, 3}), 8, 8, 3));
  expect_error([&] { open_dataset(tmp / "ok", image_shape(2, 8, 8)); }, {tmp / "ok", "[2,8,8]"});
  expect_error([&] { open_dataset(tmp / "ok", image_shape(3, 8, 8, 6)); }, {tmp / "ok", "resize 6"});
  Preprocess p;
  p.sample_shape = {8, 8};
  expect_error([&] { open_dataset(tmp / "ok", p); }, {tmp / "ok", "[8,8]"});
}

TEST(ImageFolder, MangledJpegsNeverThrow) {
  // Byte flips and cuts anywhere in a real JPEG: each decode either succeeds or reports an error.
  std::vector<uint8_t> px(64 * 48 * 3);
  for (size_t j = 0; j < px.size(); ++j) px[j] = static_cast<uint8_t>(j * 13 % 256);
  const std::string good = encode_jpeg(px, 64, 48, 3);
  Preprocess p = image_shape(3, 16, 16);
  uint32_t seed = 12345;
  auto rnd = [&] { return seed = seed * 1664525u + 1013904223u; };
  int errors = 0;
  for (int k = 0; k < 300; ++k) {
    std::string b = good;
    for (int f = 0; f < 1 + k % 4; ++f) b[rnd() % b.size()] = static_cast<char>(rnd());
    if (k % 3 == 0) b.resize(rnd() % b.size());
    Sample s;
    ASSERT_NO_THROW(s = jpeg_sample(reinterpret_cast<const uint8_t*>(b.data()), b.size(), p, "mangled"));
    if (s.error.empty()) {
      ASSERT_EQ(s.input.shape(), (Shape{3, 16, 16}));
    } else {
      EXPECT_EQ(s.error.rfind("mangled: ", 0), 0u) << s.error;
      EXPECT_FALSE(s.input.defined());
      ++errors;
    }
  }
  EXPECT_GT(errors, 50);  // cuts alone (every third case) must be caught
}
