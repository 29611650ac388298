// RAPL through the powercap sysfs tree: package domains (intel-rapl:N) and their DRAM
// subdomains (intel-rapl:N:M whose name is "dram"). Counters are microjoules and wrap at
// max_energy_range_uj; one wrap per window is corrected (windows here are seconds long,
// a wrap takes minutes even at full load).
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>

#include "joule/core/error.h"
#include "joule/profile/energy/energy_meter.h"

namespace joule::profile::energy {

namespace fs = std::filesystem;

namespace {
bool read_line(const fs::path& p, std::string& out) {
  std::ifstream f(p);
  if (!f) return false;
  std::getline(f, out);
  return static_cast<bool>(f) || !out.empty();
}

bool read_u64(const fs::path& p, uint64_t& v) {
  std::string s;
  if (!read_line(p, s)) return false;
  try {
    v = std::stoull(s);
  } catch (...) {
    return false;
  }
  return true;
}

struct Domain {
  std::string channel;  // "package-0", "dram-0"
  fs::path energy;
  uint64_t max_range = 0;
  uint64_t start = 0;
};

class Rapl : public EnergyMeter {
 public:
  Rapl(std::vector<Domain> d, double window, std::string root)
      : domains_(std::move(d)), window_(window), root_(std::move(root)) {}
  std::string source() const override { return "rapl"; }
  std::string describe() const override {
    std::string s = "RAPL via " + root_ + ":";
    for (auto& d : domains_) s += " " + d.channel;
    return s;
  }
  void start() override {
    t0_ = std::chrono::steady_clock::now();
    samples_.clear();
    for (auto& d : domains_) {
      if (!read_u64(d.energy, d.start)) fail(d.energy.string() + ": cannot read RAPL counter");
      samples_.push_back({0.0, d.channel, static_cast<double>(d.start)});
    }
  }
  Reading stop() override {
    Reading r;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    r.samples = samples_;
    int wraps = 0;
    for (auto& d : domains_) {
      uint64_t end = 0;
      if (!read_u64(d.energy, end)) fail(d.energy.string() + ": cannot read RAPL counter");
      r.samples.push_back({r.seconds, d.channel, static_cast<double>(end)});
      uint64_t delta;
      if (end >= d.start) {
        delta = end - d.start;
      } else {
        delta = d.max_range - d.start + end;
        ++wraps;
      }
      double j = static_cast<double>(delta) * 1e-6;
      r.joules_by_channel[d.channel] = j;
      r.joules += j;
    }
    r.note = "RAPL counters (uJ), update about every 1 ms";
    if (wraps) r.note += "; " + std::to_string(wraps) + " counter wrap-around(s) corrected";
    return r;
  }
  double min_window_s() const override { return window_; }

 private:
  std::vector<Domain> domains_;
  double window_;
  std::string root_;
  std::vector<Sample> samples_;
  std::chrono::steady_clock::time_point t0_;
};
}  // namespace

std::unique_ptr<EnergyMeter> open_rapl(const MeterConfig& cfg) {
  fs::path root(cfg.powercap_root);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) fail("rapl energy not available: no " + root.string() + " (no powercap driver)");
  static const std::regex pkg_re(R"(intel-rapl:(\d+))"), sub_re(R"(intel-rapl:(\d+):(\d+))");
  std::vector<Domain> domains;
  auto add = [&](const fs::path& dir, const std::string& channel) {
    Domain d;
    d.channel = channel;
    d.energy = dir / "energy_uj";
    uint64_t probe = 0;
    if (!read_u64(d.energy, probe)) fail("rapl energy not available: cannot read " + d.energy.string());
    if (!read_u64(dir / "max_energy_range_uj", d.max_range))
      fail("rapl energy not available: cannot read " + (dir / "max_energy_range_uj").string());
    domains.push_back(d);
  };
  std::vector<fs::path> pkgs;
  for (auto& e : fs::directory_iterator(root, ec))
    if (std::regex_match(e.path().filename().string(), pkg_re)) pkgs.push_back(e.path());
  std::sort(pkgs.begin(), pkgs.end());
  for (auto& p : pkgs) {
    std::string name;
    read_line(p / "name", name);
    if (name.rfind("package", 0) != 0) continue;  // psys and others would double-count
    add(p, name);
    std::vector<fs::path> subs;
    for (auto& e : fs::directory_iterator(p, ec))
      if (std::regex_match(e.path().filename().string(), sub_re)) subs.push_back(e.path());
    std::sort(subs.begin(), subs.end());
    for (auto& s : subs) {
      std::string sub;
      read_line(s / "name", sub);
      if (sub == "dram") add(s, "dram-" + name.substr(name.find('-') + 1));
    }
  }
  if (domains.empty()) fail("rapl energy not available: no package domain under " + root.string());
  return std::make_unique<Rapl>(std::move(domains), cfg.min_window_s > 0 ? cfg.min_window_s : 0.05,
                                root.string());
}

}  // namespace joule::profile::energy
