// JPEG decode, then the eval transform (resize of the shorter side, centre crop, normalisation).
// The first byte picks the sample shape: gray or RGB, and the crop size.
#include "fuzz.h"
#include "joule/data/image.h"

using namespace joule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  data::Preprocess p;
  const int64_t c = data[0] & 1 ? 3 : 1, crop = 1 + (data[0] >> 1) % 48;
  p.sample_shape = {c, crop, crop};
  if (data[0] & 0x80) p.resize = static_cast<int>(crop) + (data[0] & 0x0f);
  p.mean = {0.5f}, p.std = {0.25f};
  fuzz::expect_clean([&] {
    data::Sample s = data::jpeg_sample(data + 1, size - 1, p, "fuzz.jpg");
    if (s.error.empty() && s.input.shape() != Shape(p.sample_shape)) fuzz::finding("jpeg", "sample of the wrong shape");
    data::Image img;
    (void)data::check_jpeg(data + 1, size - 1);
  });
  return 0;
}
