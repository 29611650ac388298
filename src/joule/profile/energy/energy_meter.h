#pragma once
// Energy meters: one interface over the sensors a machine may have (RAPL through powercap
// sysfs, perf_event power events, NVML loaded at run time) and an estimator for machines
// with none. Every figure carries its source; nothing is substituted silently: open_meter()
// with a named kind throws BadInput saying why that kind is not available here.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace joule::profile::energy {

// One raw sensor reading kept for the record: time since start() in seconds, the channel
// ("package-0", "dram", "power_mw", ...) and its value in the sensor's own unit.
struct Sample {
  double t_s = 0;
  std::string channel;
  double value = 0;
};

struct Reading {
  double joules = 0;     // energy over the window, all channels together
  double seconds = 0;    // window length (steady clock)
  std::map<std::string, double> joules_by_channel;
  std::vector<Sample> samples;
  std::string note;      // caveats (update period, averaging, wrap-arounds seen)
  double watts() const { return seconds > 0 ? joules / seconds : 0; }
};

class EnergyMeter {
 public:
  virtual ~EnergyMeter() = default;
  // "rapl", "perf", "nvml" or "estimate:<profile>": printed next to every figure.
  virtual std::string source() const = 0;
  // Human description: which files, events or device are read.
  virtual std::string describe() const = 0;
  virtual void start() = 0;
  virtual Reading stop() = 0;
  // Work done between start() and stop(), for meters that model energy instead of sensing it.
  virtual void add_work(double /*flops*/, double /*bytes*/) {}
  // Shortest window the sensor resolves; per-layer replay loops run at least this long.
  virtual double min_window_s() const = 0;
  // False for the estimator: a layer's energy follows from its time, FLOPs and bytes.
  virtual bool is_sensor() const { return true; }
  // Meters that model energy: the energy of `seconds` of work doing `flops` and `bytes`.
  virtual std::optional<double> model_joules(double /*seconds*/, double /*flops*/, double /*bytes*/) const {
    return std::nullopt;
  }
};

struct MeterConfig {
  std::string powercap_root = "/sys/class/powercap";
  std::string perf_root = "/sys/bus/event_source/devices/power";
  std::string nvml_library = "libnvidia-ml.so.1";
  unsigned nvml_device = 0;
  double nvml_sample_period_s = 0.02;  // power sampling thread (when no energy counter)
  std::string estimate_profile;        // JSON device profile; empty: the built-in default
  double min_window_s = 0;             // 0: the meter's own default
};

// kind: rapl | perf | nvml | estimate. Throws BadInput "<kind> energy not available: why".
std::unique_ptr<EnergyMeter> open_meter(const std::string& kind, const MeterConfig& cfg = {});

// --energy auto: the first of rapl, perf, nvml, estimate that opens. `why` receives one line
// per kind tried ("rapl: no /sys/class/powercap", ...) so the choice can be reported.
std::unique_ptr<EnergyMeter> open_auto(const MeterConfig& cfg, std::vector<std::string>& why);

// Individual constructors (also used by tests with fake roots).
std::unique_ptr<EnergyMeter> open_rapl(const MeterConfig& cfg);
std::unique_ptr<EnergyMeter> open_perf(const MeterConfig& cfg);
std::unique_ptr<EnergyMeter> open_nvml(const MeterConfig& cfg);

}  // namespace joule::profile::energy
