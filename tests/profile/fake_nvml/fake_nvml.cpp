// A stand-in for libnvidia-ml.so.1 exposing the symbols joule's NVML meter uses.
// FAKE_NVML_MODE: "energy" (default): the total-energy counter advances 1000 mJ per read;
// "power": no energy counter (NOT_SUPPORTED), constant 50 W; "nodevice": no GPU 0.
#include <cstdlib>
#include <cstring>

namespace {
unsigned long long counter_mj = 0;
int dummy_device = 0;
const char* mode() {
  const char* m = std::getenv("FAKE_NVML_MODE");
  return m ? m : "energy";
}
}  // namespace

extern "C" {
int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** dev) {
  if (std::strcmp(mode(), "nodevice") == 0 || index != 0) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *dev = &dummy_device;
  return 0;
}
int nvmlDeviceGetTotalEnergyConsumption(void*, unsigned long long* mj) {
  if (std::strcmp(mode(), "energy") != 0) return 3;  // NVML_ERROR_NOT_SUPPORTED
  counter_mj += 1000;
  *mj = counter_mj;
  return 0;
}
int nvmlDeviceGetPowerUsage(void*, unsigned* mw) {
  *mw = 50000;
  return 0;
}
}
