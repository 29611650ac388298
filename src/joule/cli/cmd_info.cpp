#include <fmt/core.h>

#include "joule/api/info.h"
#include "joule/cli/commands.h"
#include "joule/cli/util.h"

namespace joule::cli {

namespace {
struct InfoArgs {
  std::string model, format = "table";
  bool nodes = false;
  ShapeFlags shapes;
  api::InfoOptions opt;
};

void print_plan(const nlohmann::json& p) {
  fmt::print("\nplan ({} thread{}):\n{:>4}  {:<40} {:<18} {:<13} {:<22} {}\n", p["threads"].get<int>(),
             p["threads"].get<int>() == 1 ? "" : "s", "step", "node", "op", "algorithm", "chosen by", "output / detail");
  for (auto& e : p["steps"]) {
    std::string extra = e["output"].get<std::string>();
    if (e.contains("detail")) extra += "  " + e["detail"].get<std::string>();
    if (e.contains("device")) extra += "  [" + e["device"].get<std::string>() + (e.contains("device_reason") ? ": " + e["device_reason"].get<std::string>() : "") + "]";
    fmt::print("{:>4}  {:<40} {:<18} {:<13} {:<22} {}\n", e["step"].get<size_t>(), e["node"].get<std::string>(),
               e["op"].get<std::string>(), e["algorithm"].get<std::string>(), e["source"].get<std::string>(), extra);
  }
  std::string summary;
  for (auto& [k, v] : p["algorithms"].items()) summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", v.get<int>(), k);
  fmt::print("algorithms: {}\n", summary);
  if (p.contains("device"))
    fmt::print("device: {} nodes on {}, {} on the CPU, {} copies between them (GPU arena {})\n", p["gpu_nodes"].get<int>(),
               p["device"].get<std::string>(),
               static_cast<int>(p["steps"].size()) - p["gpu_nodes"].get<int>() - p["copy_nodes"].get<int>(), p["copy_nodes"].get<int>(),
               human_bytes(p["device_memory"]["arena_bytes"].get<double>()));
  const auto& m = p["memory"];
  fmt::print("activation memory: arena {} for {} planned buffers (each buffer separate: {})\n",
             human_bytes(m["arena_bytes"].get<double>()), m["planned_buffers"].get<size_t>(),
             human_bytes(m["naive_bytes"].get<double>()));
}

// The nodes of control-flow bodies under their owner, indented by depth.
void print_bodies(const nlohmann::json& bodies, int depth) {
  const std::string pad(static_cast<size_t>(2 * depth), ' ');
  for (auto& b : bodies) {
    fmt::print("{}{} '{}' ({} nodes):\n", pad, b["attribute"].get<std::string>(), b["graph"].get<std::string>(), b["nodes"].size());
    for (auto& n : b["nodes"]) {
      fmt::print("{}  {:<{}} {}\n", pad, n["name"].get<std::string>(), std::max(0, 38 - 2 * depth), n["op"].get<std::string>());
      if (n.contains("bodies")) print_bodies(n["bodies"], depth + 2);
    }
  }
}

void print_table(const nlohmann::json& j, bool nodes) {
  fmt::print("model: {}  (producer: {}, opsets:", j["graph"].get<std::string>(), j["producer"].get<std::string>());
  for (auto& [d, v] : j["opsets"].items()) fmt::print(" {}={}", d, v.get<int64_t>());
  fmt::print(")\n");
  for (const char* io : {"inputs", "outputs"})
    for (auto& v : j[io])
      fmt::print("  {:<7} {:<24} {}\n", std::string(io).substr(0, std::string(io).size() - 1), v["name"].get<std::string>(),
                 v.contains("type") ? v["type"].get<std::string>()
                                    : v["dtype"].get<std::string>() + " " + v["shape"].get<std::string>());
  fmt::print("nodes: {}   parameters: {} ({})   MACs: {}   FLOPs: {}\n", j["num_nodes"].get<size_t>(),
             human_count(j["parameters"].get<double>()), human_bytes(j["weight_bytes"].get<double>()),
             human_count(j["total"]["macs"].get<double>()), human_count(j["total"]["flops"].get<double>()));
  if (size_t unknown = j["total"]["nodes_without_shapes"].get<size_t>())
    fmt::print("  ({} node{} with non-static shapes (symbolic dims) not counted in MACs/FLOPs; "
               "--input-shape 1,3,224,224 or NAME=DIMS resolves them)\n",
               unknown, unknown == 1 ? "" : "s");
  fmt::print("\n{:<28} {:>6} {:>10} {:>10} {:>7}\n", "op", "count", "MACs", "params", "%MACs");
  double total = std::max(1.0, j["total"]["macs"].get<double>());
  for (auto& h : j["op_histogram"])
    fmt::print("{:<28} {:>6} {:>10} {:>10} {:>6.1f}%\n", h["op"].get<std::string>(), h["count"].get<int>(),
               human_count(h["macs"].get<double>()), human_count(h["params"].get<double>()),
               100.0 * h["macs"].get<double>() / total);
  if (nodes) {
    fmt::print("\n{:<40} {:<18} {:>10} {:>10}  {}\n", "node", "op", "MACs", "FLOPs", "output");
    for (auto& n : j["nodes"]) {
      fmt::print("{:<40} {:<18} {:>10} {:>10}  {}\n", n["name"].get<std::string>(), n["op"].get<std::string>(),
                 n.contains("macs") ? human_count(n["macs"].get<double>()) : "?",
                 n.contains("flops") ? human_count(n["flops"].get<double>()) : "?",
                 n["outputs"].empty() ? "" : n["outputs"][0].get<std::string>());
      if (n.contains("bodies")) print_bodies(n["bodies"], 1);
    }
  }
  auto& bad = j["unsupported"];
  if (bad.empty()) {
    fmt::print("\nall {} nodes supported\n", j["num_nodes"].get<size_t>());
  } else {
    fmt::print("\nunsupported nodes ({}):\n", bad.size());
    for (auto& b : bad) fmt::print("  {}\n", b.get<std::string>());
  }
}
}  // namespace

Action add_info(CLI::App& app) {
  auto a = std::make_shared<InfoArgs>();
  app.add_option("model", a->model, "ONNX model file")->required();
  app.add_option("--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  app.add_flag("--nodes", a->nodes, "also list every node with its cost (table format)");
  add_input_shape_option(app, a->shapes);
  app.add_flag("--after-passes{default}", a->opt.after_passes,
               "show the model after a pass pipeline: --after-passes (default pipeline) or --after-passes=LIST");
  app.add_flag("--plan", a->opt.plan,
               "compile a session and print the algorithm chosen per node (after the default passes unless "
               "--after-passes says otherwise)");
  app.add_option("--threads", a->opt.threads, "threads the plan is made for (--plan; default: all cores)")
      ->check(CLI::NonNegativeNumber);
  add_algo_options(app, a->opt.algo);
  add_device_options(app, a->opt.device, a->opt.gpu_math, a->opt.gpu_fp32);
  add_precision_options(app, a->opt.precision, a->opt.bf16_min_sqnr_db);
  return [a] {
    a->opt.input_shapes = a->shapes.parse();
    const nlohmann::json j = api::info(api::Model::load(a->model), a->opt);
    if (a->format == "json") {
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    if (j.contains("passes")) {
      const nlohmann::json& pipeline = j["passes"];
      fmt::print("after passes '{}': nodes {} -> {}, initializers {} -> {} ({:.1f} ms)\n",
                 a->opt.after_passes.empty() ? "default" : a->opt.after_passes, pipeline["nodes_before"].get<size_t>(),
                 pipeline["nodes_after"].get<size_t>(), pipeline["initializers_before"].get<size_t>(),
                 pipeline["initializers_after"].get<size_t>(), pipeline["ms"].get<double>());
      for (auto& p : pipeline["passes"])
        fmt::print("  {:<22} {:>5} -> {:<5} nodes {:>8.2f} ms  {}\n", p["pass"].get<std::string>(),
                   p["nodes_before"].get<size_t>(), p["nodes_after"].get<size_t>(), p["ms"].get<double>(),
                   p["info"].dump());
    }
    print_table(j, a->nodes);
    if (j.contains("plan")) print_plan(j["plan"]);
    if (j.contains("precision"))
      fmt::print("precision bf16: {} layer(s) on bf16 kernels, {} kept fp32 by the SQNR check (--bf16-min-sqnr {:g}, "
                 "{} check input); the other Conv/MatMul/Gemm layers run fp32 where a float32 algorithm is "
                 "estimated faster\n",
                 j["precision"]["bf16_layers"].get<size_t>(), j["precision"]["fp32_layers"].get<size_t>(),
                 j["precision"]["min_sqnr_db"].get<double>(), j["precision"].value("check_input", "no"));
    return 0;
  };
}

}  // namespace joule::cli
