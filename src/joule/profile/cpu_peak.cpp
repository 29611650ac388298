#include "joule/profile/cpu_peak.h"

#include <fmt/core.h>
#include <immintrin.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "joule/core/cpu_features.h"
#include "joule/core/file_util.h"
#include "joule/core/thread_pool.h"
#include "joule/profile/peak_loop.h"

namespace joule::profile {

namespace {
using Clock = std::chrono::steady_clock;
constexpr int kLoopMs = 20;  // one repetition of a measurement
constexpr int kReps = 3;     // best of this many undisturbed repetitions...
constexpr int kMaxReps = 10;  // ... or of this many while other work takes cores from the loops
constexpr int kSchema = 1;   // of the cache file
std::atomic<uint64_t> g_sink{0};  // the loops' results go here, so that they cannot be optimised away

// The nominal figure: FLOP/cycle/core from the ISA (2 FMA units assumed) x the max clock.
CpuPeak nominal() {
  CpuPeak p;
  const CpuFeatures& f = cpu_features();
  if (f.avx512) {
    p.isa = "avx512f+fma";
    p.flops_per_cycle = 64;  // 2 FMA units x 16 fp32 lanes x 2 flops
  } else if (f.avx2_fma) {
    p.isa = "avx2+fma";
    p.flops_per_cycle = 32;  // 2 FMA units x 8 lanes x 2
  } else {
    p.isa = "scalar/sse";
    p.flops_per_cycle = 8;
  }
  std::ifstream maxf("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double khz = 0;
  if (maxf && (maxf >> khz) && khz > 0) {
    p.ghz = khz / 1e6;
    p.ghz_source = "cpufreq cpuinfo_max_freq";
  } else {
    std::ifstream ci("/proc/cpuinfo");
    std::string line;
    while (std::getline(ci, line)) {
      if (line.rfind("cpu MHz", 0) == 0) {
        auto c = line.find(':');
        if (c != std::string::npos) p.ghz = std::stod(line.substr(c + 1)) / 1e3;
        p.ghz_source = "/proc/cpuinfo 'cpu MHz', turbo not counted";
        break;
      }
    }
  }
  if (p.ghz <= 0) {
    p.ghz = 1.0;
    p.ghz_source = "unknown clock: 1 GHz assumed";
  }
  p.gflops_per_core = p.flops_per_cycle * p.ghz;
  return p;
}

// FMA loops: kPeakChains independent accumulators (the AVX-512 one is in peak_loop_avx512.cpp).
__attribute__((target("avx2,fma"))) float fma_chains_avx2(int64_t iters) {
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-6f);
  __m256 acc[kPeakChains];
  for (int c = 0; c < kPeakChains; ++c) acc[c] = _mm256_set1_ps(1.0f + 0.01f * c);
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 16  // the accumulators in registers, at -O2 too
    for (int c = 0; c < kPeakChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], m, a);
  for (int c = 1; c < kPeakChains; ++c) acc[0] = _mm256_add_ps(acc[0], acc[c]);
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc[0]), _mm256_extractf128_ps(acc[0], 1));
  return _mm_cvtss_f32(_mm_hadd_ps(_mm_hadd_ps(s, s), s));
}

using v4f = float __attribute__((vector_size(16)));
float mul_add_chains_sse(int64_t iters) {  // no FMA: a multiply and an add
  const v4f m = v4f{} + 0.999999f, a = v4f{} + 1e-6f;
  v4f acc[kPeakChains];
  for (int c = 0; c < kPeakChains; ++c) acc[c] = v4f{} + (1.0f + 0.01f * c);
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 16  // the accumulators in registers, at -O2 too
    for (int c = 0; c < kPeakChains; ++c) acc[c] = acc[c] * m + a;
  for (int c = 1; c < kPeakChains; ++c) acc[0] += acc[c];
  return acc[0][0] + acc[0][1] + acc[0][2] + acc[0][3];
}

struct FmaLoop {
  float (*run)(int64_t iters);
  double flops_per_iter;
  const char* what;
};

FmaLoop fma_loop() {
  const CpuFeatures& f = cpu_features();
  if (f.avx512) return {fma_chains_avx512, kPeakChains * 16 * 2, "AVX-512 FMA"};
  if (f.avx2_fma) return {fma_chains_avx2, kPeakChains * 8 * 2, "AVX2 FMA"};
  return {mul_add_chains_sse, kPeakChains * 4 * 2, "SSE multiply-add"};
}

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Runs work(thread index, deadline) -> units done on `threads` threads started together, kLoopMs
// each, until kReps repetitions were undisturbed (every thread on a core >= 90% of the time)
// or kMaxReps; the best total units per second of wall time. `disturbed`: none was.
template <class Work>
double best_rate(int threads, const Work& work, bool& disturbed) {
  double best = 0;
  int clean = 0;
  for (int rep = 0; rep < kMaxReps && clean < kReps; ++rep) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    Clock::time_point start;
    std::vector<double> units(threads);
    std::vector<Clock::time_point> end(threads);
    std::vector<double> cpu_s(threads);
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i)
      pool.emplace_back([&, i] {
        ++ready;
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        const double cpu0 = thread_cpu_s();
        units[i] = work(i, start + std::chrono::milliseconds(kLoopMs));
        end[i] = Clock::now();
        cpu_s[i] = thread_cpu_s() - cpu0;
      });
    while (ready.load() < threads) std::this_thread::yield();
    start = Clock::now();
    go.store(true, std::memory_order_release);
    for (auto& t : pool) t.join();  // blocks: the main thread takes no core from the loops
    double total = 0;
    bool on_core = true;
    for (int i = 0; i < threads; ++i) {
      total += units[i];
      on_core = on_core && cpu_s[i] >= 0.9 * std::chrono::duration<double>(end[i] - start).count();
    }
    const std::chrono::duration<double> wall = *std::max_element(end.begin(), end.end()) - start;
    best = std::max(best, total / wall.count());
    clean += on_core;
  }
  disturbed = disturbed || clean == 0;
  return best;
}

double fma_gflops(int threads, bool& disturbed) {
  const FmaLoop loop = fma_loop();
  constexpr int64_t kChunk = 4096;  // iterations between clock reads (~10-50 us)
  auto work = [&](int, Clock::time_point deadline) {
    float sum = 0;
    double flops = 0;
    do {
      sum += loop.run(kChunk);
      flops += kChunk * loop.flops_per_iter;
    } while (Clock::now() < deadline);
    g_sink.fetch_add(static_cast<uint64_t>(sum), std::memory_order_relaxed);
    return flops;
  };
  return best_rate(threads, work, disturbed) / 1e9;
}

// The last-level cache of cpu0 and how many of them this machine has (one per socket, CCX...).

int count_cpus(const std::string& list) {  // "0-7,96-103" -> 16
  std::stringstream ss(list);
  std::string range;
  int n = 0;
  while (std::getline(ss, range, ',')) {
    int a = 0, b = 0;
    const int got = std::sscanf(range.c_str(), "%d-%d", &a, &b);
    n += got == 2 ? b - a + 1 : got == 1 ? 1 : 0;
  }
  return std::max(1, n);
}

}  // namespace

Llc last_level_cache() {
  Llc llc;
  int level = 0, sharing = 1;
  for (int i = 0; i < 16; ++i) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
    std::ifstream lf(dir + "level"), tf(dir + "type"), sf(dir + "size"), cf(dir + "shared_cpu_list");
    int lv = 0;
    std::string type, size, cpus;
    if (!(lf >> lv) || !(tf >> type) || !(sf >> size) || type == "Instruction" || lv < level) continue;
    char* unit = nullptr;
    size_t bytes = std::strtoull(size.c_str(), &unit, 10);
    bytes <<= *unit == 'K' ? 10 : *unit == 'M' ? 20 : *unit == 'G' ? 30 : 0;
    if (bytes == 0) continue;
    level = lv;
    llc.bytes = bytes;
    sharing = cf >> cpus ? count_cpus(cpus) : 1;
  }
  if (llc.bytes > 0) {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    llc.instances = std::max(1, static_cast<int>((online + sharing - 1) / sharing));
  } else if (const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE); l3 > 0) {
    llc.bytes = static_cast<size_t>(l3);
  } else {
    llc.bytes = size_t{16} << 20;  // unknown: a 64 MiB buffer
  }
  return llc;
}

namespace {

using v2u = uint64_t __attribute__((vector_size(16), aligned(8), may_alias));  // SSE2: every x86-64
constexpr size_t kBlock = (size_t{1} << 20) / sizeof(uint64_t);  // words read between clock reads

uint64_t sum_block(const uint64_t* p) {  // a cache line per iteration
  const v2u* v = reinterpret_cast<const v2u*>(p);
  v2u s0{}, s1{}, s2{}, s3{};
  for (size_t i = 0; i < kBlock / 2; i += 4) {
    s0 += v[i];
    s1 += v[i + 1];
    s2 += v[i + 2];
    s3 += v[i + 3];
  }
  const v2u s = s0 + s1 + s2 + s3;
  return s[0] + s[1];
}

// GB/s reading `bytes` in all, each thread its own part, over and over.
double read_gbs(int threads, size_t bytes, bool& disturbed) {
  const size_t words = std::max(kBlock, bytes / sizeof(uint64_t) / threads / kBlock * kBlock);
  std::vector<std::unique_ptr<uint64_t[]>> parts(threads);
  {  // each thread writes its part: real pages (unwritten ones read as the one zero page), on its node
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i)
      pool.emplace_back([&, i] {
        parts[i].reset(new uint64_t[words]);
        std::fill_n(parts[i].get(), words, uint64_t{1});
      });
    for (auto& t : pool) t.join();
  }
  auto work = [&](int i, Clock::time_point deadline) {
    uint64_t sum = 0;
    size_t at = 0;
    double read = 0;
    do {
      sum += sum_block(parts[i].get() + at);
      read += kBlock * sizeof(uint64_t);
      at = (at + kBlock) % words;
    } while (Clock::now() < deadline);
    g_sink.fetch_add(sum, std::memory_order_relaxed);
    return read;
  };
  return best_rate(threads, work, disturbed) / 1e9;
}

void measure(CpuPeak& p) {
  const int n = ThreadPool::default_threads();
  p.measure_threads = n;
  p.disturbed = false;
  p.measured_gflops_1t = fma_gflops(1, p.disturbed);
  p.measured_gflops_all = n == 1 ? p.measured_gflops_1t : fma_gflops(n, p.disturbed);
  const Llc llc = last_level_cache();
  // At most 2 GiB and an eighth of the memory (a failed allocation would end the process).
  const double ram = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  const size_t max_buffer = ram > 0 ? std::min(size_t{2} << 30, static_cast<size_t>(ram / 8)) : size_t{256} << 20;
  p.bandwidth_gbs_1t = read_gbs(1, std::min(4 * llc.bytes, max_buffer), p.disturbed);
  p.bandwidth_gbs_all =
      n == 1 ? p.bandwidth_gbs_1t : read_gbs(n, std::min(4 * llc.bytes * llc.instances, max_buffer), p.disturbed);
}

// What a cached measurement must match: another CPU, a capped ISA, other cores or another
// joule re-measure.
nlohmann::json cache_key() {
  const CpuFeatures& f = cpu_features();
  return {{"model", f.model}, {"isa", f.isa}, {"cores", ThreadPool::default_threads()}, {"joule", JOULE_VERSION}};
}

bool read_cache(const std::string& path, CpuPeak& p) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return false;
  try {
    const nlohmann::json j = nlohmann::json::parse(read_file(path));
    if (j.at("schema") != kSchema || j.at("key") != cache_key() || j.at("disturbed") != false) return false;
    CpuPeak c = p;
    c.measured_gflops_1t = j.at("gflops_1t").get<double>();
    c.measured_gflops_all = j.at("gflops_all").get<double>();
    c.bandwidth_gbs_1t = j.at("bandwidth_gbs_1t").get<double>();
    c.bandwidth_gbs_all = j.at("bandwidth_gbs_all").get<double>();
    c.measure_threads = j.at("threads").get<int>();
    for (double v : {c.measured_gflops_1t, c.measured_gflops_all, c.bandwidth_gbs_1t, c.bandwidth_gbs_all})
      if (!std::isfinite(v) || v <= 0) return false;
    if (c.measure_threads < 1) return false;
    p = c;
    return true;
  } catch (const std::exception&) {
    return false;  // corrupt: measure again
  }
}

void write_cache(const std::string& path, const CpuPeak& p) {
  if (path.empty()) return;
  const nlohmann::json j = {{"schema", kSchema},
                            {"key", cache_key()},
                            {"gflops_1t", p.measured_gflops_1t},
                            {"gflops_all", p.measured_gflops_all},
                            {"bandwidth_gbs_1t", p.bandwidth_gbs_1t},
                            {"bandwidth_gbs_all", p.bandwidth_gbs_all},
                            {"threads", p.measure_threads},
                            {"disturbed", p.disturbed}};
  try {
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    write_file_atomic(path, j.dump(1) + "\n");
  } catch (const std::exception&) {
    // An unwritable cache only means measuring again next time.
  }
}

std::string describe(const CpuPeak& p) {
  return fmt::format(
      "{}: FP32 {} loop ({} chains), {} ms, best of {}: {:.1f} GFLOP/s on 1 thread ({:.1f} FLOP/cycle at "
      "{:.2f} GHz), {:.1f} on {} threads; memory read of 4x the last-level cache, best of {}: {:.1f} GB/s on 1 "
      "thread, {:.1f} on {} threads; nominal {} FLOP/cycle/core ({}{}) x {:.2f} GHz ({}) = {:.1f} GFLOP/s per "
      "core, for comparison{}",
      p.source, fma_loop().what, kPeakChains, kLoopMs, kReps, p.measured_gflops_1t, p.measured_flops_per_cycle, p.ghz,
      p.measured_gflops_all, p.measure_threads, kReps, p.bandwidth_gbs_1t, p.bandwidth_gbs_all, p.measure_threads,
      p.flops_per_cycle, p.isa, p.flops_per_cycle >= 32 ? ", 2 FMA units assumed" : "", p.ghz, p.ghz_source,
      p.gflops_per_core,
      p.disturbed ? "; other work took cores from the loops, so the figures may be low: measured again next time" : "");
}

// The 1-thread figure x threads, never above the all-core one (nor below the 1-thread one).
double scaled(double one, double all, int threads) { return std::min(one * std::max(1, threads), std::max(one, all)); }
}  // namespace

std::string cpu_peak_cache_path() {
  if (const char* p = std::getenv("JOULE_CPU_PEAK_CACHE"); p && *p) return p;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/joule/cpu_peak.json";
}

CpuPeak detect_cpu_peak(const std::string& cache_path) {
  CpuPeak p = nominal();
  if (read_cache(cache_path, p)) {
    p.source = "cached " + cache_path;
  } else {
    measure(p);
    p.source = "measured";
    write_cache(cache_path, p);
  }
  p.measured_flops_per_cycle = p.measured_gflops_1t / p.ghz;
  p.assumptions = describe(p);
  return p;
}

const CpuPeak& cpu_peak() {
  static const CpuPeak p = detect_cpu_peak(cpu_peak_cache_path());
  return p;
}

double peak_gflops(const CpuPeak& p, int threads) {
  return scaled(p.measured_gflops_1t, p.measured_gflops_all, threads);
}
double peak_bandwidth_gbs(const CpuPeak& p, int threads) {
  return scaled(p.bandwidth_gbs_1t, p.bandwidth_gbs_all, threads);
}
double peak_gflops(int threads) { return peak_gflops(cpu_peak(), threads); }
double peak_bandwidth_gbs(int threads) { return peak_bandwidth_gbs(cpu_peak(), threads); }

nlohmann::json to_json(const CpuPeak& p, int threads) {
  return {{"isa", p.isa},
          {"flops_per_cycle_per_core", p.flops_per_cycle},
          {"ghz", p.ghz},
          {"ghz_source", p.ghz_source},
          {"cores", threads},
          {"peak_gflops", peak_gflops(p, threads)},
          {"peak_bandwidth_gbs", peak_bandwidth_gbs(p, threads)},
          {"nominal_gflops", p.gflops_per_core * std::max(1, threads)},
          {"measured_gflops_1t", p.measured_gflops_1t},
          {"measured_gflops_all", p.measured_gflops_all},
          {"measured_flops_per_cycle_per_core", p.measured_flops_per_cycle},
          {"bandwidth_gbs_1t", p.bandwidth_gbs_1t},
          {"bandwidth_gbs_all", p.bandwidth_gbs_all},
          {"measure_threads", p.measure_threads},
          {"source", p.source},
          {"disturbed", p.disturbed},
          {"assumptions", p.assumptions}};
}

}  // namespace joule::profile
