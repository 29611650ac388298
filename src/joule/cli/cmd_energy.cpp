#include <fmt/core.h>

#include "joule/api/energy.h"
#include "joule/cli/commands.h"
#include "joule/cli/util.h"
#include "joule/core/file_util.h"

namespace joule::cli {

namespace {
struct EnergyArgs {
  std::string model = "default", out = "energy_profile.json";
  api::EnergyCalibrateOptions opt;
};
}  // namespace

Action add_energy(CLI::App& app) {
  auto a = std::make_shared<EnergyArgs>();
  app.require_subcommand(1);
  CLI::App* probe = app.add_subcommand("probe", "Say which energy sources this machine has, and why not the others");
  CLI::App* cal = app.add_subcommand("calibrate", "Fit the estimator's device profile to a real sensor");
  for (CLI::App* s : {probe, cal})
    s->add_option("--powercap-root", a->opt.powercap_root, "powercap sysfs root (default /sys/class/powercap)");
  cal->add_option("model", a->model, "model whose layers are measured (default: the bundled CNN)");
  cal->add_option("--sensor", a->opt.sensor, "auto, rapl, perf or nvml")
      ->check(CLI::IsMember({"auto", "rapl", "perf", "nvml"}));
  cal->add_option("-o,--output", a->out, "device profile JSON to write");
  cal->add_option("--name", a->opt.name, "profile name (default: calibrated-<sensor>)");
  cal->add_option("--threads", a->opt.threads, "threads")->check(CLI::NonNegativeNumber);
  return [a, probe] {
    if (probe->parsed()) {
      const api::EnergyProbe p = api::energy_probe(a->opt.powercap_root);
      for (auto& w : p.why) fmt::print("{}\n", w);
      fmt::print("--energy auto uses: {} ({})\n", p.source, p.description);
      return 0;
    }
    const profile::Calibration c = api::energy_calibrate(api::Model::load(a->model), a->opt);
    write_file_atomic(a->out, profile::energy::to_json(c.profile).dump(2) + "\n");
    fmt::print("fitted against {} over {} windows: static {:.3f} W, {:.3g} pJ/FLOP, {:.3g} pJ/byte -> {}\n", c.sensor,
               c.points.size(), c.profile.static_power_w, c.profile.joules_per_flop * 1e12,
               c.profile.joules_per_byte * 1e12, a->out);
    return 0;
  };
}

}  // namespace joule::cli
