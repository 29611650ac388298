// IDX image and label files (MNIST's format), plain or gzipped. Input: [uint16 LE L][L bytes: the
// labels file, none when L = 0][the images file].
#include <algorithm>
#include <filesystem>

#include "fuzz.h"
#include "joule/data/readers.h"

using namespace joule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t labels = std::min<size_t>(data[0] | data[1] << 8, size - 2);
  const std::string images = fuzz::write_scratch("f-images-idx3-ubyte", data + 2 + labels, size - 2 - labels);
  const std::filesystem::path label_file = fuzz::scratch() / "f-labels-idx1-ubyte";
  if (labels > 0)
    fuzz::write_scratch("f-labels-idx1-ubyte", data + 2, labels);
  else
    std::filesystem::remove(label_file);
  fuzz::expect_clean([&] {
    auto ds = data::open_idx(images, data::Preprocess{});
    (void)ds->describe();
    for (size_t i = 0; i < std::min<size_t>(ds->size(), 8); ++i) (void)ds->get(i);
    if (ds->size() > 0) (void)ds->get(ds->size() - 1);
  });
  return 0;
}
