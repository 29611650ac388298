#include "joule/api/energy.h"

namespace joule::api {

nlohmann::json EnergyProbe::to_json() const {
  return {{"tried", why}, {"auto_uses", {{"source", source}, {"description", description}}}};
}

EnergyProbe energy_probe(const std::string& powercap_root) {
  profile::energy::MeterConfig cfg;
  if (!powercap_root.empty()) cfg.powercap_root = powercap_root;
  EnergyProbe p;
  auto m = profile::energy::open_auto(cfg, p.why);
  p.source = m->source();
  p.description = m->describe();
  return p;
}

profile::Calibration energy_calibrate(const Model& m, const EnergyCalibrateOptions& o) {
  profile::ProfileOptions opt;
  if (!o.powercap_root.empty()) opt.meter.powercap_root = o.powercap_root;
  opt.model_name = m.name();
  opt.energy = o.sensor;
  opt.threads = o.threads;
  opt.runs = 10;
  opt.warmup = 3;
  return profile::calibrate_estimator(m.graph(), opt, o.name.empty() ? "calibrated" : o.name);
}

}  // namespace joule::api
