#include <fmt/core.h>

#include <filesystem>

#include "joule/cli/commands.h"
#include "joule/cli/util.h"
#include "joule/core/file_util.h"
#include "joule/profile/calibrate.h"

namespace joule::cli {

namespace {
struct EnergyArgs {
  std::string model = "default", sensor = "auto", out = "energy_profile.json", name, powercap_root;
  int threads = 1;
};
}  // namespace

Action add_energy(CLI::App& app) {
  auto a = std::make_shared<EnergyArgs>();
  app.require_subcommand(1);
  CLI::App* probe = app.add_subcommand("probe", "Say which energy sources this machine has, and why not the others");
  CLI::App* cal = app.add_subcommand("calibrate", "Fit the estimator's device profile to a real sensor");
  for (CLI::App* s : {probe, cal})
    s->add_option("--powercap-root", a->powercap_root, "powercap sysfs root (default /sys/class/powercap)");
  cal->add_option("model", a->model, "model whose layers are measured (default: the bundled CNN)");
  cal->add_option("--sensor", a->sensor, "auto, rapl, perf or nvml")->check(CLI::IsMember({"auto", "rapl", "perf", "nvml"}));
  cal->add_option("-o,--output", a->out, "device profile JSON to write");
  cal->add_option("--name", a->name, "profile name (default: calibrated-<sensor>)");
  cal->add_option("--threads", a->threads, "threads")->check(CLI::NonNegativeNumber);
  return [a, probe, cal] {
    profile::energy::MeterConfig cfg;
    if (!a->powercap_root.empty()) cfg.powercap_root = a->powercap_root;
    if (probe->parsed()) {
      std::vector<std::string> why;
      auto m = profile::energy::open_auto(cfg, why);
      for (auto& w : why) fmt::print("{}\n", w);
      fmt::print("--energy auto uses: {} ({})\n", m->source(), m->describe());
      return 0;
    }
    (void)cal;
    profile::ProfileOptions opt;
    const std::string path = resolve_model_path(a->model);
    opt.model_name = safe_filename(std::filesystem::path(path).stem().string());
    opt.energy = a->sensor;
    opt.meter = cfg;
    opt.threads = a->threads;
    opt.runs = 10;
    opt.warmup = 3;
    profile::Calibration c =
        profile::calibrate_estimator(load_model_or_default(path), opt, a->name.empty() ? "calibrated" : a->name);
    write_file_atomic(a->out, profile::energy::to_json(c.profile).dump(2) + "\n");
    fmt::print("fitted against {} over {} windows: static {:.3f} W, {:.3g} pJ/FLOP, {:.3g} pJ/byte -> {}\n", c.sensor,
               c.points.size(), c.profile.static_power_w, c.profile.joules_per_flop * 1e12,
               c.profile.joules_per_byte * 1e12, a->out);
    return 0;
  };
}

}  // namespace joule::cli
