#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "joule/core/file_util.h"
#include "joule/profile/cpu_peak.h"

using namespace joule::profile;
namespace fs = std::filesystem;

namespace {

// cpu_peak() in this test binary caches in the build dir, never in the user's ~/.cache.
class PeakCacheInBuildDir : public ::testing::Environment {
 public:
  void SetUp() override { ::setenv("JOULE_CPU_PEAK_CACHE", JOULE_BINARY_DIR "/test_cpu_peak.json", 0); }
};
[[maybe_unused]] const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new PeakCacheInBuildDir);

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("joule_cpu_peak_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(joule::read_file(p.string())); }

void expect_measured_values_sane(const CpuPeak& p) {
  for (double v : {p.measured_gflops_1t, p.measured_gflops_all, p.measured_flops_per_cycle, p.bandwidth_gbs_1t,
                   p.bandwidth_gbs_all}) {
    EXPECT_TRUE(std::isfinite(v)) << v;
    EXPECT_GT(v, 0.0);
  }
  EXPECT_GE(p.measure_threads, 1);
  // Below the theoretical max of the ISA with 2 FMA units (SSE: a multiply and an add unit
  // each way) at the clock we read, with a 2.5x margin for boost above it: VMs report the base
  // clock in 'cpu MHz' (an EPYC at 2.1 GHz nominal measured 104 FLOP/cycle, i.e. ~3.4 GHz real).
  // What this catches is a loop the compiler removed (absurd figures), not a fast machine.
  const std::map<std::string, double> two_units = {{"avx512f+fma", 64}, {"avx2+fma", 32}, {"scalar/sse", 16}};
  ASSERT_TRUE(two_units.count(p.isa)) << p.isa;
  EXPECT_LT(p.measured_gflops_1t, two_units.at(p.isa) * p.ghz * 2.5) << p.assumptions;
  EXPECT_NEAR(p.measured_flops_per_cycle, p.measured_gflops_1t / p.ghz, 1e-9);
}

}  // namespace

TEST(CpuPeak, MeasuredOncePerProcess) {
  const CpuPeak& a = cpu_peak();
  const CpuPeak& b = cpu_peak();
  EXPECT_EQ(&a, &b);
  expect_measured_values_sane(a);
  EXPECT_GT(a.gflops_per_core, 0.0);  // the nominal figure stays
  EXPECT_NE(a.assumptions.find("FLOP/cycle"), std::string::npos);
  EXPECT_NE(a.assumptions.find("best of"), std::string::npos);
  EXPECT_NE(a.assumptions.find("nominal"), std::string::npos);
  EXPECT_EQ(peak_gflops(1), peak_gflops(a, 1));
  EXPECT_EQ(peak_bandwidth_gbs(64), peak_bandwidth_gbs(a, 64));
}

TEST(CpuPeak, ScalesFromOneThreadCappedByAllCores) {
  CpuPeak p;
  p.measured_gflops_1t = 100;
  p.measured_gflops_all = 700;
  p.bandwidth_gbs_1t = 20;
  p.bandwidth_gbs_all = 50;
  p.measure_threads = 8;
  EXPECT_DOUBLE_EQ(peak_gflops(p, 1), 100);
  EXPECT_DOUBLE_EQ(peak_gflops(p, 0), 100);
  EXPECT_DOUBLE_EQ(peak_gflops(p, 4), 400);
  EXPECT_DOUBLE_EQ(peak_gflops(p, 8), 700);
  EXPECT_DOUBLE_EQ(peak_gflops(p, 16), 700);
  EXPECT_DOUBLE_EQ(peak_bandwidth_gbs(p, 1), 20);
  EXPECT_DOUBLE_EQ(peak_bandwidth_gbs(p, 2), 40);
  EXPECT_DOUBLE_EQ(peak_bandwidth_gbs(p, 4), 50);
  const nlohmann::json j = to_json(p, 4);
  EXPECT_DOUBLE_EQ(j["peak_gflops"].get<double>(), 400);
  EXPECT_DOUBLE_EQ(j["peak_bandwidth_gbs"].get<double>(), 50);
  for (const char* k : {"isa", "flops_per_cycle_per_core", "ghz", "nominal_gflops", "measured_gflops_1t",
                        "measured_gflops_all", "measured_flops_per_cycle_per_core", "bandwidth_gbs_1t",
                        "bandwidth_gbs_all", "measure_threads", "source", "assumptions"})
    EXPECT_TRUE(j.contains(k)) << k;
}

TEST(CpuPeak, CachedMeasurementIsReadBack) {
  TempDir tmp;
  const fs::path cache = tmp.path / "sub" / "cpu_peak.json";  // the directory is created
  const CpuPeak first = detect_cpu_peak(cache.string());
  EXPECT_EQ(first.source, "measured");
  expect_measured_values_sane(first);
  ASSERT_TRUE(fs::exists(cache));
  nlohmann::json j = read_json(cache);
  EXPECT_TRUE(j.contains("key"));
  EXPECT_EQ(j["disturbed"], first.disturbed);
  // A disturbed measurement (other work took cores from the loops) would be measured again:
  // read back the one just made as if it was not.
  j["disturbed"] = false;
  std::ofstream(cache) << j.dump();

  const CpuPeak second = detect_cpu_peak(cache.string());
  EXPECT_EQ(second.source, "cached " + cache.string());
  EXPECT_EQ(second.measured_gflops_1t, first.measured_gflops_1t);
  EXPECT_EQ(second.measured_gflops_all, first.measured_gflops_all);
  EXPECT_EQ(second.bandwidth_gbs_1t, first.bandwidth_gbs_1t);
  EXPECT_EQ(second.bandwidth_gbs_all, first.bandwidth_gbs_all);
  EXPECT_EQ(second.measure_threads, first.measure_threads);
  EXPECT_EQ(second.isa, first.isa);
  EXPECT_NE(second.assumptions.find("cached " + cache.string()), std::string::npos);

  j["disturbed"] = true;
  j["gflops_1t"] = 1e-3;  // would be read back if a disturbed cache were accepted
  std::ofstream(cache) << j.dump();
  const CpuPeak third = detect_cpu_peak(cache.string());
  EXPECT_EQ(third.source, "measured");
  EXPECT_NE(third.measured_gflops_1t, 1e-3);
}

TEST(CpuPeak, CorruptCacheIsMeasuredAgainAndOverwritten) {
  TempDir tmp;
  const fs::path cache = tmp.path / "cpu_peak.json";
  for (const char* bad : {"{not json", "[1, 2]", "{\"schema\": 1}"}) {
    std::ofstream(cache) << bad;
    const CpuPeak p = detect_cpu_peak(cache.string());
    EXPECT_EQ(p.source, "measured") << bad;
    expect_measured_values_sane(p);
    EXPECT_EQ(read_json(cache)["gflops_1t"].get<double>(), p.measured_gflops_1t) << bad;
  }
}

TEST(CpuPeak, CacheOfAnotherMachineIsMeasuredAgain) {
  TempDir tmp;
  const fs::path cache = tmp.path / "cpu_peak.json";
  detect_cpu_peak(cache.string());
  nlohmann::json j = read_json(cache);
  j["disturbed"] = false;
  const nlohmann::json key = j["key"];
  for (const char* field : {"model", "isa", "cores", "joule"}) {
    j["key"] = key;
    j["key"][field] = "something else";
    j["gflops_1t"] = 1e-3;  // would be read back if the key were accepted
    std::ofstream(cache) << j.dump();
    const CpuPeak p = detect_cpu_peak(cache.string());
    EXPECT_EQ(p.source, "measured") << field;
    EXPECT_NE(p.measured_gflops_1t, 1e-3) << field;
    EXPECT_EQ(read_json(cache)["key"], key) << field;
  }
}

TEST(CpuPeak, UnwritableCacheIsNotAnError) {
  TempDir tmp;
  const fs::path file = tmp.path / "a_file";
  std::ofstream(file) << "x";
  const fs::path cache = file / "cpu_peak.json";  // its "directory" is a file
  CpuPeak p;
  EXPECT_NO_THROW(p = detect_cpu_peak(cache.string()));
  EXPECT_EQ(p.source, "measured");
  expect_measured_values_sane(p);
}
