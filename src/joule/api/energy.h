#pragma once
// Energy sources: which this machine has (and why not the others), and fitting the estimator's
// device profile to a real sensor.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "joule/api/model.h"
#include "joule/profile/calibrate.h"

namespace joule::api {

struct EnergyProbe {
  std::vector<std::string> why;     // one line per source tried
  std::string source, description;  // what `energy auto` uses
  nlohmann::json to_json() const;
};
EnergyProbe energy_probe(const std::string& powercap_root = "");

struct EnergyCalibrateOptions {
  std::string sensor = "auto";  // auto | rapl | perf | nvml
  std::string name;             // profile name (default "calibrated")
  int threads = 1;
  std::string powercap_root;    // "" = /sys/class/powercap
};
profile::Calibration energy_calibrate(const Model& m, const EnergyCalibrateOptions& o = {});

}  // namespace joule::api
