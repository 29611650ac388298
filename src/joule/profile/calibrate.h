#pragma once
// `joule energy calibrate`: fits the estimator's coefficients to a real sensor. Each layer of
// a model, replayed under the sensor, gives one window (time, FLOPs, bytes, joules); the idle
// window gives static power; a least-squares fit gives a device profile.
#include "joule/profile/energy/estimator.h"
#include "joule/profile/profiler.h"

namespace joule::profile {

struct Calibration {
  energy::DeviceProfile profile;
  std::string sensor;  // source of the measurements
  std::vector<energy::CalibrationPoint> points;
};

// opt.energy must name a sensor or be "auto" (the estimator is refused: it cannot calibrate
// itself). Throws BadInput "no energy sensor on this machine: ..." when none opens.
Calibration calibrate_estimator(const ir::Graph& g, ProfileOptions opt, const std::string& profile_name);

}  // namespace joule::profile
