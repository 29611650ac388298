// perf_event power events (the kernel's RAPL PMU, /sys/bus/event_source/devices/power):
// energy-pkg + energy-ram when exposed, else energy-psys (whole platform). System-wide
// counters on the PMU's cpu, read as raw counts times the event's scale (joules).
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "joule/core/error.h"
#include "joule/profile/energy/energy_meter.h"

namespace joule::profile::energy {

namespace fs = std::filesystem;

namespace {
std::string first_line(const fs::path& p) {
  std::ifstream f(p);
  std::string s;
  if (f) std::getline(f, s);
  return s;
}

struct Event {
  std::string name;
  int fd = -1;
  double scale = 0;
  uint64_t start = 0;
};

class Perf : public EnergyMeter {
 public:
  Perf(std::vector<Event> ev, double window) : ev_(std::move(ev)), window_(window) {}
  ~Perf() override {
    for (auto& e : ev_)
      if (e.fd >= 0) close(e.fd);
  }
  std::string source() const override { return "perf"; }
  std::string describe() const override {
    std::string s = "perf_event power PMU:";
    for (auto& e : ev_) s += " " + e.name;
    return s;
  }
  void start() override {
    samples_.clear();
    t0_ = std::chrono::steady_clock::now();
    for (auto& e : ev_) {
      e.start = read_count(e);
      samples_.push_back({0.0, e.name, static_cast<double>(e.start)});
    }
  }
  Reading stop() override {
    Reading r;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    r.samples = samples_;
    for (auto& e : ev_) {
      uint64_t end = read_count(e);
      r.samples.push_back({r.seconds, e.name, static_cast<double>(end)});
      double j = static_cast<double>(end - e.start) * e.scale;
      r.joules_by_channel[e.name] = j;
      r.joules += j;
    }
    r.note = "perf_event power counters (64-bit, no wrap); kernel updates about every 1 ms";
    return r;
  }
  double min_window_s() const override { return window_; }

 private:
  static uint64_t read_count(const Event& e) {
    uint64_t v = 0;
    if (::read(e.fd, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) fail("perf: cannot read " + e.name);
    return v;
  }
  std::vector<Event> ev_;
  double window_;
  std::vector<Sample> samples_;
  std::chrono::steady_clock::time_point t0_;
};
}  // namespace

std::unique_ptr<EnergyMeter> open_perf(const MeterConfig& cfg) {
  fs::path root(cfg.perf_root);
  std::error_code ec;
  if (!fs::is_directory(root / "events", ec))
    fail("perf energy not available: no " + (root / "events").string() + " (kernel exposes no power PMU)");
  std::string type_s = first_line(root / "type");
  if (type_s.empty()) fail("perf energy not available: cannot read " + (root / "type").string());
  std::vector<std::string> names;
  for (const char* n : {"energy-pkg", "energy-ram"})
    if (fs::exists(root / "events" / n)) names.push_back(n);
  if (names.empty() && fs::exists(root / "events" / "energy-psys")) names.push_back("energy-psys");
  if (names.empty()) fail("perf energy not available: no energy-pkg, energy-ram or energy-psys event under " + root.string());
  int cpu = 0;
  std::string mask = first_line(root / "cpumask");
  if (!mask.empty()) cpu = std::atoi(mask.c_str());
  std::vector<Event> evs;
  for (auto& n : names) {
    std::string spec = first_line(root / "events" / n);  // "event=0x05"
    auto eq = spec.find("event=");
    if (eq == std::string::npos) fail("perf energy not available: cannot parse event '" + spec + "' of " + n);
    Event e;
    e.name = n;
    try {
      e.scale = std::stod(first_line(root / "events" / (n + ".scale")));
    } catch (...) {
      fail("perf energy not available: no scale for " + n);
    }
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = static_cast<uint32_t>(std::stoul(type_s));
    attr.config = std::stoull(spec.substr(eq + 6), nullptr, 0);
    long fd = syscall(SYS_perf_event_open, &attr, -1, cpu, -1, 0);
    if (fd < 0) {
      std::string why = std::strerror(errno);
      for (auto& o : evs) close(o.fd);
      fail("perf energy not available: perf_event_open(" + n + ") failed: " + why +
           " (needs root or perf_event_paranoid <= 0)");
    }
    e.fd = static_cast<int>(fd);
    evs.push_back(e);
  }
  // A PMU that opens but never counts (seen on virtual machines) is not a sensor.
  auto meter = std::make_unique<Perf>(std::move(evs), cfg.min_window_s > 0 ? cfg.min_window_s : 0.05);
  meter->start();
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
  volatile double sink = 0;
  while (std::chrono::steady_clock::now() < until) sink = sink + 1.0;
  if (meter->stop().joules <= 0)
    fail("perf energy not available: the power events open but do not advance (virtual machine?)");
  return meter;
}

}  // namespace joule::profile::energy
