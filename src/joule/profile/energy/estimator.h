#pragma once
// The energy estimator for machines with no sensor: a device profile (JSON) gives static
// power and per-FLOP / per-byte energy, and
//   energy = static_power_w * seconds + joules_per_flop * flops + joules_per_byte * bytes.
// Its figures are labelled "estimate:<profile name>"; they are a model, not a measurement.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "joule/profile/energy/energy_meter.h"

namespace joule::profile::energy {

struct DeviceProfile {
  std::string name;
  double static_power_w = 0;
  double joules_per_flop = 0;
  double joules_per_byte = 0;
  std::string source;  // where the numbers come from, in words
};

// The built-in default (same numbers as data/energy/default_cpu.json).
DeviceProfile default_device_profile();
DeviceProfile device_profile_from_json(const nlohmann::json& j, const std::string& where);
DeviceProfile load_device_profile(const std::string& path);  // throws BadInput naming the file
nlohmann::json to_json(const DeviceProfile& p);

double estimate_joules(const DeviceProfile& p, double seconds, double flops, double bytes);

std::unique_ptr<EnergyMeter> open_estimator(const MeterConfig& cfg);

// One measured window for calibration: time, work done, energy from a real sensor.
struct CalibrationPoint {
  double seconds = 0, flops = 0, bytes = 0, joules = 0;
};
// Least-squares fit of (static_power_w, joules_per_flop, joules_per_byte) to the points
// (normal equations, 3x3). Throws BadInput when the points do not determine them.
DeviceProfile fit_device_profile(const std::vector<CalibrationPoint>& pts, const std::string& name,
                                 const std::string& source);

}  // namespace joule::profile::energy
