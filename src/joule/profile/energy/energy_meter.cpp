#include "joule/profile/energy/energy_meter.h"

#include "joule/core/error.h"
#include "joule/profile/energy/estimator.h"

namespace joule::profile::energy {

std::unique_ptr<EnergyMeter> open_meter(const std::string& kind, const MeterConfig& cfg) {
  if (kind == "rapl") return open_rapl(cfg);
  if (kind == "perf") return open_perf(cfg);
  if (kind == "nvml") return open_nvml(cfg);
  if (kind == "estimate") return open_estimator(cfg);
  fail("unknown energy source '" + kind + "' (none, auto, rapl, perf, nvml, estimate)");
}

std::unique_ptr<EnergyMeter> open_auto(const MeterConfig& cfg, std::vector<std::string>& why) {
  for (const char* k : {"rapl", "perf", "nvml"}) {
    try {
      auto m = open_meter(k, cfg);
      why.push_back(std::string(k) + ": available, chosen");
      return m;
    } catch (const Error& e) {
      why.push_back(e.what());
    }
  }
  auto m = open_estimator(cfg);
  why.push_back("no sensor found: using the estimator (" + m->source() + "), a model, not a measurement");
  return m;
}

}  // namespace joule::profile::energy
