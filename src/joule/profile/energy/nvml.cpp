// NVML loaded at run time (dlopen, no build dependency). Uses the total-energy counter
// (Volta and later) when the device supports it, else samples power on a thread and
// integrates with the trapezoid rule. NVML updates the counter about every 100 ms and, on
// Ampere and later, reports power averaged over 1 s: windows must be long (default 1 s).
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "joule/core/error.h"
#include "joule/profile/energy/energy_meter.h"

namespace joule::profile::energy {

namespace {
using Device = void*;
using InitFn = int (*)();
using ShutdownFn = int (*)();
using HandleFn = int (*)(unsigned, Device*);
using EnergyFn = int (*)(Device, unsigned long long*);
using PowerFn = int (*)(Device, unsigned*);

class Nvml : public EnergyMeter {
 public:
  Nvml(void* lib, Device dev, EnergyFn energy, PowerFn power, ShutdownFn shutdown, double window, double period,
       std::string path)
      : lib_(lib), dev_(dev), energy_(energy), power_(power), shutdown_(shutdown), window_(window),
        period_(period), path_(std::move(path)) {}
  ~Nvml() override {
    stop_thread();
    if (shutdown_) shutdown_();
    dlclose(lib_);
  }
  std::string source() const override { return "nvml"; }
  std::string describe() const override {
    return std::string("NVML (") + path_ + "): " +
           (energy_ ? "total energy counter" : "power sampled every " + std::to_string(period_) + " s, trapezoid");
  }
  void start() override {
    samples_.clear();
    t0_ = std::chrono::steady_clock::now();
    if (energy_) {
      unsigned long long mj = 0;
      if (energy_(dev_, &mj) != 0) fail("nvml: nvmlDeviceGetTotalEnergyConsumption failed");
      start_mj_ = mj;
      samples_.push_back({0.0, "energy_mj", static_cast<double>(mj)});
      return;
    }
    sample_power();
    running_ = true;
    thread_ = std::thread([this] {
      while (running_) {
        std::this_thread::sleep_for(std::chrono::duration<double>(period_));
        if (running_) sample_power();
      }
    });
  }
  Reading stop() override {
    Reading r;
    if (energy_) {
      unsigned long long mj = 0;
      if (energy_(dev_, &mj) != 0) fail("nvml: nvmlDeviceGetTotalEnergyConsumption failed");
      r.seconds = now();
      samples_.push_back({r.seconds, "energy_mj", static_cast<double>(mj)});
      r.joules = static_cast<double>(mj - start_mj_) * 1e-3;
      r.note = "NVML total energy counter (mJ), updated about every 100 ms";
    } else {
      stop_thread();
      sample_power();
      r.seconds = samples_.back().t_s - samples_.front().t_s;  // the integrated interval
      for (size_t i = 1; i < samples_.size(); ++i)
        r.joules += 0.5 * (samples_[i].value + samples_[i - 1].value) * 1e-3 * (samples_[i].t_s - samples_[i - 1].t_s);
      r.note = "NVML power (mW) sampled and integrated (trapezoid); NVML updates about every 100 ms and "
               "Ampere+ GPUs average power over 1 s, so short windows are smeared";
    }
    r.joules_by_channel["gpu"] = r.joules;
    r.samples = samples_;
    return r;
  }
  double min_window_s() const override { return window_; }

 private:
  double now() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }
  void sample_power() {
    unsigned mw = 0;
    if (power_(dev_, &mw) != 0) return;  // a failed sample is skipped, not invented
    std::lock_guard<std::mutex> lk(mu_);
    samples_.push_back({now(), "power_mw", static_cast<double>(mw)});
  }
  void stop_thread() {
    running_ = false;
    if (thread_.joinable()) thread_.join();
  }
  void* lib_;
  Device dev_;
  EnergyFn energy_;
  PowerFn power_;
  ShutdownFn shutdown_;
  double window_, period_;
  std::string path_;
  unsigned long long start_mj_ = 0;
  std::vector<Sample> samples_;
  std::mutex mu_;
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::chrono::steady_clock::time_point t0_;
};
}  // namespace

std::unique_ptr<EnergyMeter> open_nvml(const MeterConfig& cfg) {
  void* lib = dlopen(cfg.nvml_library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) fail("nvml energy not available: cannot load " + cfg.nvml_library + " (no NVIDIA driver)");
  auto sym = [&](const char* name) { return dlsym(lib, name); };
  auto init = reinterpret_cast<InitFn>(sym("nvmlInit_v2"));
  auto shutdown = reinterpret_cast<ShutdownFn>(sym("nvmlShutdown"));
  auto handle = reinterpret_cast<HandleFn>(sym("nvmlDeviceGetHandleByIndex_v2"));
  auto energy = reinterpret_cast<EnergyFn>(sym("nvmlDeviceGetTotalEnergyConsumption"));
  auto power = reinterpret_cast<PowerFn>(sym("nvmlDeviceGetPowerUsage"));
  auto bail = [&](const std::string& why) {
    dlclose(lib);
    fail("nvml energy not available: " + why);
  };
  if (!init || !handle || !power) bail(cfg.nvml_library + " lacks nvmlInit_v2/nvmlDeviceGetHandleByIndex_v2/nvmlDeviceGetPowerUsage");
  if (init() != 0) bail("nvmlInit_v2 failed");
  Device dev = nullptr;
  if (handle(cfg.nvml_device, &dev) != 0) {
    if (shutdown) shutdown();
    bail("no GPU with index " + std::to_string(cfg.nvml_device));
  }
  unsigned long long probe = 0;
  if (energy && energy(dev, &probe) != 0) energy = nullptr;  // not supported: sample power instead
  return std::make_unique<Nvml>(lib, dev, energy, power, shutdown, cfg.min_window_s > 0 ? cfg.min_window_s : 1.0,
                                cfg.nvml_sample_period_s, cfg.nvml_library);
}

}  // namespace joule::profile::energy
