#include "joule/profile/calibrate.h"

#include "joule/core/error.h"

namespace joule::profile {

Calibration calibrate_estimator(const ir::Graph& g, ProfileOptions opt, const std::string& profile_name) {
  if (opt.energy == "estimate" || opt.energy == "none")
    fail("energy calibrate needs a real sensor (rapl, perf or nvml), not '" + opt.energy + "'");
  if (opt.energy == "auto") {
    std::string why;
    for (const char* k : {"rapl", "perf", "nvml"}) {
      try {
        energy::open_meter(k, opt.meter);
        opt.energy = k;
        break;
      } catch (const Error& e) {
        why += std::string(why.empty() ? "" : "; ") + e.what();
      }
    }
    if (opt.energy == "auto") fail("no energy sensor on this machine, nothing to calibrate against (" + why + ")");
  }
  opt.layer_energy = true;
  ProfileResult r = profile_model(g, opt);
  const EnergyResult& e = *r.energy;
  Calibration c;
  c.sensor = e.source;
  const double idle = e.idle_power_w.value_or(0);
  if (e.idle_power_w) c.points.push_back({e.window_s, 0, 0, idle * e.window_s});
  c.points.push_back({e.seconds / e.iterations, r.total_flops, r.total_bytes, e.joules_per_inference});
  for (auto& L : r.layers)
    if (L.has_cost && L.energy_j)
      c.points.push_back({L.ms.median * 1e-3, L.flops, L.bytes, *L.energy_j + idle * L.ms.median * 1e-3});
  c.profile = energy::fit_device_profile(
      c.points, profile_name,
      "fitted by joule energy calibrate against " + e.source + " on model '" + r.model + "' (" +
          std::to_string(c.points.size()) + " windows, least squares)");
  return c;
}

}  // namespace joule::profile
