// NumPy .npy bytes (the -i input files, .npy datasets and labels).
#include "fuzz.h"
#include "joule/core/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  joule::fuzz::expect_clean([&] {
    joule::Tensor t = joule::parse_npy(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npy");
    if (t.dtype() == joule::DType::String) return;
    // What was read must be whole: touch every byte (ASan reports a buffer shorter than numel says).
    volatile uint8_t sum = 0;
    const auto* b = static_cast<const uint8_t*>(t.raw());
    for (size_t i = 0; i < t.nbytes(); ++i) sum = static_cast<uint8_t>(sum + b[i]);
  });
  return 0;
}
