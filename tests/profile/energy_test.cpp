// Energy meters without the hardware: RAPL against a fake powercap tree (wrap-around
// included), NVML against a fake library, the estimator by hand.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/profile/energy/energy_meter.h"
#include "joule/profile/energy/estimator.h"

using namespace joule;
using namespace joule::profile::energy;
namespace fs = std::filesystem;

namespace {
fs::path temp_dir(const std::string& tag) {
  auto p = fs::temp_directory_path() / ("joule_energy_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void put(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << s << "\n";
}

// package-0 with core (ignored) and dram subdomains, package-1, and a psys zone (skipped).
fs::path fake_powercap() {
  fs::path r = temp_dir("rapl");
  put(r / "intel-rapl:0/name", "package-0");
  put(r / "intel-rapl:0/energy_uj", "1000000");
  put(r / "intel-rapl:0/max_energy_range_uj", "262143328850");
  put(r / "intel-rapl:0/intel-rapl:0:0/name", "core");
  put(r / "intel-rapl:0/intel-rapl:0:0/energy_uj", "5");
  put(r / "intel-rapl:0/intel-rapl:0:0/max_energy_range_uj", "262143328850");
  put(r / "intel-rapl:0/intel-rapl:0:1/name", "dram");
  put(r / "intel-rapl:0/intel-rapl:0:1/energy_uj", "65532610987");  // 2 J before the wrap
  put(r / "intel-rapl:0/intel-rapl:0:1/max_energy_range_uj", "65534610987");
  put(r / "intel-rapl:1/name", "package-1");
  put(r / "intel-rapl:1/energy_uj", "0");
  put(r / "intel-rapl:1/max_energy_range_uj", "262143328850");
  put(r / "intel-rapl:2/name", "psys");
  put(r / "intel-rapl:2/energy_uj", "0");
  put(r / "intel-rapl:2/max_energy_range_uj", "262143328850");
  return r;
}

bool is_bad_input(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
  } catch (const Error& e) {
    return e.is_user_error() && std::string(e.what()).find(needle) != std::string::npos;
  }
  return false;
}
}  // namespace

TEST(Rapl, PackageAndDramWithWrapAround) {
  fs::path r = fake_powercap();
  MeterConfig cfg;
  cfg.powercap_root = r.string();
  auto m = open_meter("rapl", cfg);
  EXPECT_EQ(m->source(), "rapl");
  EXPECT_NE(m->describe().find("dram-0"), std::string::npos);
  EXPECT_EQ(m->describe().find("psys"), std::string::npos);
  m->start();
  put(r / "intel-rapl:0/energy_uj", "4500000");                 // +3.5 J
  put(r / "intel-rapl:0/intel-rapl:0:1/energy_uj", "1000000");  // wrapped: 2 J + 1 J
  put(r / "intel-rapl:0/intel-rapl:0:0/energy_uj", "9999999");  // core: inside package, not added
  put(r / "intel-rapl:1/energy_uj", "500000");                  // +0.5 J
  Reading rd = m->stop();
  EXPECT_NEAR(rd.joules_by_channel.at("package-0"), 3.5, 1e-9);
  EXPECT_NEAR(rd.joules_by_channel.at("dram-0"), 3.0, 1e-9);
  EXPECT_NEAR(rd.joules_by_channel.at("package-1"), 0.5, 1e-9);
  EXPECT_EQ(rd.joules_by_channel.size(), 3u);
  EXPECT_NEAR(rd.joules, 7.0, 1e-9);
  EXPECT_NE(rd.note.find("wrap"), std::string::npos);
  EXPECT_EQ(rd.samples.size(), 6u);  // start and stop per domain
  EXPECT_GE(rd.seconds, 0.0);
  fs::remove_all(r);
}

TEST(Rapl, MissingTreeIsNotAvailableWithReason) {
  MeterConfig cfg;
  cfg.powercap_root = "/nonexistent/powercap";
  EXPECT_TRUE(is_bad_input([&] { open_meter("rapl", cfg); }, "rapl energy not available: no /nonexistent/powercap"));
  fs::path empty = temp_dir("empty");
  cfg.powercap_root = empty.string();
  EXPECT_TRUE(is_bad_input([&] { open_meter("rapl", cfg); }, "no package domain"));
  fs::remove_all(empty);
}

TEST(Perf, MissingPmuIsNotAvailableWithReason) {
  MeterConfig cfg;
  cfg.perf_root = "/nonexistent/power";
  EXPECT_TRUE(is_bad_input([&] { open_meter("perf", cfg); }, "perf energy not available"));
}

TEST(Nvml, EnergyCounter) {
  ::setenv("FAKE_NVML_MODE", "energy", 1);
  MeterConfig cfg;
  cfg.nvml_library = JOULE_FAKE_NVML;
  auto m = open_meter("nvml", cfg);
  EXPECT_EQ(m->source(), "nvml");
  EXPECT_NE(m->describe().find("total energy counter"), std::string::npos);
  EXPECT_DOUBLE_EQ(m->min_window_s(), 1.0);
  m->start();
  Reading r = m->stop();
  EXPECT_DOUBLE_EQ(r.joules, 1.0);  // the fake advances 1000 mJ per read
  EXPECT_NE(r.note.find("100 ms"), std::string::npos);
  EXPECT_EQ(r.samples.size(), 2u);
}

TEST(Nvml, PowerSamplingTrapezoid) {
  ::setenv("FAKE_NVML_MODE", "power", 1);
  MeterConfig cfg;
  cfg.nvml_library = JOULE_FAKE_NVML;
  cfg.nvml_sample_period_s = 0.002;
  auto m = open_meter("nvml", cfg);
  EXPECT_NE(m->describe().find("trapezoid"), std::string::npos);
  m->start();
  ::usleep(20000);
  Reading r = m->stop();
  ASSERT_GE(r.samples.size(), 2u);
  ASSERT_GT(r.seconds, 0.0);
  EXPECT_NEAR(r.watts(), 50.0, 1e-6);  // constant power integrates exactly
  EXPECT_NE(r.note.find("1 s"), std::string::npos);
  ::setenv("FAKE_NVML_MODE", "energy", 1);
}

TEST(Nvml, NoDeviceOrNoLibraryIsNotAvailable) {
  MeterConfig cfg;
  cfg.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  EXPECT_TRUE(is_bad_input([&] { open_meter("nvml", cfg); }, "cannot load"));
  ::setenv("FAKE_NVML_MODE", "nodevice", 1);
  cfg.nvml_library = JOULE_FAKE_NVML;
  EXPECT_TRUE(is_bad_input([&] { open_meter("nvml", cfg); }, "no GPU with index 0"));
  ::setenv("FAKE_NVML_MODE", "energy", 1);
}

TEST(Estimator, ArithmeticByHand) {
  DeviceProfile p = default_device_profile();
  // 10 W * 2 s + 5 pJ * 1e9 + 20 pJ * 1e8 = 20 + 0.005 + 0.002
  EXPECT_NEAR(estimate_joules(p, 2.0, 1e9, 1e8), 20.007, 1e-12);
  DeviceProfile q{"toy", 1.5, 2e-9, 3e-9, "test"};
  EXPECT_NEAR(estimate_joules(q, 4.0, 1000, 100), 6.0 + 2e-6 + 3e-7, 1e-15);
  MeterConfig cfg;
  auto m = open_meter("estimate", cfg);
  EXPECT_EQ(m->source(), "estimate:default-cpu");
  EXPECT_FALSE(m->is_sensor());
  m->start();
  m->add_work(1e9, 0);
  m->add_work(0, 1e8);
  Reading r = m->stop();
  EXPECT_NEAR(r.joules_by_channel.at("flops"), 0.005, 1e-15);
  EXPECT_NEAR(r.joules_by_channel.at("bytes"), 0.002, 1e-15);
  EXPECT_NEAR(r.joules, 10.0 * r.seconds + 0.007, 1e-12);
  EXPECT_NEAR(*m->model_joules(0.5, 2e9, 0), 5.0 + 0.01, 1e-12);
}

TEST(Estimator, ShippedProfileMatchesBuiltInAndLoads) {
  DeviceProfile f = load_device_profile(std::string(JOULE_SOURCE_DIR) + "/data/energy/default_cpu.json");
  DeviceProfile b = default_device_profile();
  EXPECT_EQ(f.name, b.name);
  EXPECT_DOUBLE_EQ(f.static_power_w, b.static_power_w);
  EXPECT_DOUBLE_EQ(f.joules_per_flop, b.joules_per_flop);
  EXPECT_DOUBLE_EQ(f.joules_per_byte, b.joules_per_byte);
  EXPECT_EQ(f.source, b.source);
  EXPECT_NE(f.source.find("rough assumptions"), std::string::npos);
  fs::path d = temp_dir("prof");
  write_file_atomic((d / "p.json").string(), R"({"name":"mine","static_power_w":2,"joules_per_flop":1e-12,"joules_per_byte":0})");
  MeterConfig cfg;
  cfg.estimate_profile = (d / "p.json").string();
  EXPECT_EQ(open_meter("estimate", cfg)->source(), "estimate:mine");
  write_file_atomic((d / "bad.json").string(), R"({"name":"x"})");
  cfg.estimate_profile = (d / "bad.json").string();
  EXPECT_TRUE(is_bad_input([&] { open_meter("estimate", cfg); }, "not a device profile"));
  fs::remove_all(d);
}

TEST(Estimator, LeastSquaresRecoversCoefficients) {
  DeviceProfile truth{"t", 12.0, 7e-12, 30e-12, ""};
  std::vector<CalibrationPoint> pts;
  for (int i = 1; i <= 8; ++i) {
    double s = 0.01 * i, f = 1e8 * ((i * 37) % 11 + 1), b = 1e7 * ((i * 13) % 7 + 1);
    pts.push_back({s, f, b, estimate_joules(truth, s, f, b)});
  }
  DeviceProfile fit = fit_device_profile(pts, "fit", "test");
  EXPECT_NEAR(fit.static_power_w, 12.0, 1e-6);
  EXPECT_NEAR(fit.joules_per_flop, 7e-12, 1e-18);
  EXPECT_NEAR(fit.joules_per_byte, 30e-12, 1e-17);
  EXPECT_TRUE(is_bad_input([&] { fit_device_profile({pts[0], pts[1]}, "x", ""); }, "at least 3"));
}

TEST(Auto, FallsBackToEstimatorAndSaysWhy) {
  MeterConfig cfg;
  cfg.powercap_root = "/nonexistent/powercap";
  cfg.perf_root = "/nonexistent/power";
  cfg.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  std::vector<std::string> why;
  auto m = open_auto(cfg, why);
  EXPECT_EQ(m->source(), "estimate:default-cpu");
  ASSERT_EQ(why.size(), 4u);
  EXPECT_NE(why[0].find("rapl"), std::string::npos);
  EXPECT_NE(why[1].find("perf"), std::string::npos);
  EXPECT_NE(why[2].find("nvml"), std::string::npos);
  EXPECT_NE(why[3].find("estimator"), std::string::npos);
  cfg.powercap_root = fake_powercap().string();
  why.clear();
  EXPECT_EQ(open_auto(cfg, why)->source(), "rapl");
  EXPECT_TRUE(is_bad_input([&] { open_meter("bogus", cfg); }, "unknown energy source"));
}
