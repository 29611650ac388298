// An energy device profile (`--device-profile`, JSON: the estimator's coefficients).
#include "fuzz.h"
#include "joule/profile/energy/estimator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = joule::fuzz::write_scratch("device.json", data, size);
  joule::fuzz::expect_clean([&] { (void)joule::profile::energy::load_device_profile(path); });
  return 0;
}
