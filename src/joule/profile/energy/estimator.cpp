#include "joule/profile/energy/estimator.h"

#include <fmt/core.h>

#include <chrono>
#include <cmath>

#include "joule/core/error.h"
#include "joule/core/file_util.h"

namespace joule::profile::energy {

namespace {
const char* kDefaultSource =
    "rough assumptions, not measured on this machine: static 10 W (a guess at the share of a "
    "server package's idle+uncore power behind 2 vCPUs); 5 pJ/FLOP (Horowitz, ISSCC 2014, 45 nm: "
    "fp32 multiply 3.7 pJ + add 0.9 pJ; newer nodes are cheaper per op but instruction overhead "
    "is not counted); 20 pJ/byte (between on-chip SRAM, ~1-3 pJ/byte, and DRAM, ~100+ pJ/byte, "
    "since 'bytes' counts every tensor read and write before caching). Calibrate with "
    "'joule energy calibrate' on a machine with a sensor.";

class Estimator : public EnergyMeter {
 public:
  Estimator(DeviceProfile p, double window) : p_(std::move(p)), window_(window) {}
  std::string source() const override { return "estimate:" + p_.name; }
  std::string describe() const override {
    return fmt::format("estimator '{}': {:g} W static + {:g} pJ/FLOP + {:g} pJ/byte ({})", p_.name, p_.static_power_w,
                       p_.joules_per_flop * 1e12, p_.joules_per_byte * 1e12, p_.source.substr(0, p_.source.find(':')));
  }
  void start() override {
    flops_ = bytes_ = 0;
    t0_ = std::chrono::steady_clock::now();
  }
  void add_work(double flops, double bytes) override {
    flops_ += flops;
    bytes_ += bytes;
  }
  Reading stop() override {
    Reading r;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    r.joules_by_channel["static"] = p_.static_power_w * r.seconds;
    r.joules_by_channel["flops"] = p_.joules_per_flop * flops_;
    r.joules_by_channel["bytes"] = p_.joules_per_byte * bytes_;
    r.joules = estimate_joules(p_, r.seconds, flops_, bytes_);
    r.samples.push_back({r.seconds, "flops", flops_});
    r.samples.push_back({r.seconds, "bytes", bytes_});
    r.note = "estimated from time, FLOPs and bytes with profile '" + p_.name + "', not measured";
    return r;
  }
  double min_window_s() const override { return window_; }
  bool is_sensor() const override { return false; }
  std::optional<double> model_joules(double seconds, double flops, double bytes) const override {
    return estimate_joules(p_, seconds, flops, bytes);
  }

 private:
  DeviceProfile p_;
  double window_;
  double flops_ = 0, bytes_ = 0;
  std::chrono::steady_clock::time_point t0_;
};
}  // namespace

DeviceProfile default_device_profile() { return {"default-cpu", 10.0, 5e-12, 20e-12, kDefaultSource}; }

DeviceProfile device_profile_from_json(const nlohmann::json& j, const std::string& where) {
  DeviceProfile p;
  try {
    p.name = j.at("name").get<std::string>();
    p.static_power_w = j.at("static_power_w").get<double>();
    p.joules_per_flop = j.at("joules_per_flop").get<double>();
    p.joules_per_byte = j.at("joules_per_byte").get<double>();
    p.source = j.value("source", std::string("unspecified"));
  } catch (const nlohmann::json::exception& e) {
    fail(where + ": not a device profile (needs name, static_power_w, joules_per_flop, joules_per_byte): " +
         e.what());
  }
  JOULE_CHECK(!p.name.empty(), where + ": device profile name is empty");
  JOULE_CHECK(p.static_power_w >= 0 && p.joules_per_flop >= 0 && p.joules_per_byte >= 0,
              where + ": device profile coefficients must be >= 0");
  return p;
}

DeviceProfile load_device_profile(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    fail(path + ": invalid JSON: " + e.what());
  }
  return device_profile_from_json(j, path);
}

nlohmann::json to_json(const DeviceProfile& p) {
  return {{"name", p.name},
          {"static_power_w", p.static_power_w},
          {"joules_per_flop", p.joules_per_flop},
          {"joules_per_byte", p.joules_per_byte},
          {"source", p.source}};
}

double estimate_joules(const DeviceProfile& p, double seconds, double flops, double bytes) {
  return p.static_power_w * seconds + p.joules_per_flop * flops + p.joules_per_byte * bytes;
}

std::unique_ptr<EnergyMeter> open_estimator(const MeterConfig& cfg) {
  DeviceProfile p = cfg.estimate_profile.empty() ? default_device_profile() : load_device_profile(cfg.estimate_profile);
  return std::make_unique<Estimator>(std::move(p), cfg.min_window_s > 0 ? cfg.min_window_s : 0.0);
}

DeviceProfile fit_device_profile(const std::vector<CalibrationPoint>& pts, const std::string& name,
                                 const std::string& source) {
  JOULE_CHECK(pts.size() >= 3, "calibration needs at least 3 measured windows, got " + std::to_string(pts.size()));
  // Columns scaled to unit RMS so that seconds (~1) and FLOPs (~1e9) are comparable.
  double scale[3] = {0, 0, 0};
  for (auto& q : pts) {
    scale[0] += q.seconds * q.seconds;
    scale[1] += q.flops * q.flops;
    scale[2] += q.bytes * q.bytes;
  }
  for (double& s : scale) {
    s = std::sqrt(s / static_cast<double>(pts.size()));
    JOULE_CHECK(s > 0, "calibration points do not vary in time, FLOPs or bytes");
  }
  double a[3][4] = {};
  for (auto& q : pts) {
    double x[3] = {q.seconds / scale[0], q.flops / scale[1], q.bytes / scale[2]};
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) a[i][j] += x[i] * x[j];
      a[i][3] += x[i] * q.joules;
    }
  }
  // Gaussian elimination with partial pivoting.
  for (int c = 0; c < 3; ++c) {
    int piv = c;
    for (int r = c + 1; r < 3; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
    JOULE_CHECK(std::fabs(a[piv][c]) > 1e-12 * static_cast<double>(pts.size()),
                "calibration points do not separate time, FLOPs and bytes (vary the layers measured)");
    for (int k = 0; k < 4; ++k) std::swap(a[c][k], a[piv][k]);
    for (int r = 0; r < 3; ++r) {
      if (r == c) continue;
      double f = a[r][c] / a[c][c];
      for (int k = 0; k < 4; ++k) a[r][k] -= f * a[c][k];
    }
  }
  DeviceProfile p;
  p.name = name;
  p.static_power_w = a[0][3] / a[0][0] / scale[0];
  p.joules_per_flop = a[1][3] / a[1][1] / scale[1];
  p.joules_per_byte = a[2][3] / a[2][2] / scale[2];
  p.source = source;
  return p;
}

}  // namespace joule::profile::energy
