// joule devices: the CPU and the GPUs this joule can run models on, whether the CUDA backend is
// built in, and why a GPU cannot be used when one cannot.
#include <fmt/format.h>

#include <fmt/ranges.h>

#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "joule/cli/commands.h"
#include "joule/core/cpu_features.h"
#include "joule/cuda/backend.h"

namespace joule::cli {

Action add_devices(CLI::App& app) {
  auto format = std::make_shared<std::string>("table");
  app.add_option("--format", *format, "table or json")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
  return [format]() {
    const CpuFeatures& cpu = cpu_features();
    const cuda::DeviceList l = cuda::list_devices();
    // What the kernel choices depend on: AMX only where the OS grants this process the tiles.
    std::vector<std::string> features;
    if (cpu.avx2_fma) features.push_back("avx2_fma");
    if (cpu.avx512) features.push_back("avx512");
    if (cpu.int8_dot) features.push_back("int8_dot");
    if (cpu.avx512_bf16) features.push_back("avx512_bf16");
    if (cpu.amx_bf16) features.push_back("amx_bf16");
    nlohmann::json j;
    j["cpu"] = {{"device", "cpu"},   {"model", cpu.model},       {"isa", cpu.isa},
                {"features", features}, {"threads", std::thread::hardware_concurrency()}};
    j["cuda_built"] = l.cuda_built;
    j["gpus"] = nlohmann::json::array();
    for (const cuda::GpuInfo& g : l.gpus)
      j["gpus"].push_back({{"device", cuda::device_name(g.index)},
                           {"name", g.name},
                           {"uuid", g.uuid},
                           {"pci_bus", g.pci_bus},
                           {"memory_bytes", g.memory_bytes},
                           {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)},
                           {"multiprocessors", g.multiprocessors},
                           {"usable", g.usable},
                           {"why", g.why}});
    if (l.cuda_built) {
      j["cuda_runtime"] = l.runtime_version;
      j["driver"] = l.driver_version;
      j["cudnn"] = l.cudnn_version;
      j["cublas"] = l.cublas_version;
    }
    if (!l.why.empty()) j["why_no_gpu"] = l.why;
    if (*format == "json") {
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("cpu      {} [{}{}: {}], {} hardware threads\n", cpu.model, cpu.isa,
               cpu.cap_source.empty() ? "" : " by " + cpu.cap_source, fmt::join(features, ", "),
               std::thread::hardware_concurrency());
    fmt::print("CUDA     {}\n", l.cuda_built ? fmt::format("built in (runtime {}, cuDNN {}{}{})", l.runtime_version, l.cudnn_version,
                                                             l.cublas_version.empty() ? "" : ", cuBLAS " + l.cublas_version,
                                                             l.driver_version.empty() ? "" : ", driver supports " + l.driver_version)
                                              : "not built in");
    for (const cuda::GpuInfo& g : l.gpus)
      fmt::print("{:<8} {} ({} GiB, sm_{}{}, {} SMs, {}){}\n", cuda::device_name(g.index), g.name, g.memory_bytes >> 30, g.cc_major,
                 g.cc_minor, g.multiprocessors, g.pci_bus, g.usable ? "" : "  unusable: " + g.why);
    if (!l.why.empty()) fmt::print("no GPU: {}\n", l.why);
    return 0;
  };
}

}  // namespace joule::cli
