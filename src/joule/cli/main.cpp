// joule: measure, analyze and optimize neural networks. Thin over the library: parse flags,
// call it, print. Exit codes: 0 ok, 2 bad input (the message says what to fix), 1 internal fault.
#include <fmt/core.h>

#include <map>

#include "joule/cli/commands.h"
#include "joule/cli/util.h"
#include "joule/core/error.h"

int main(int argc, char** argv) {
  joule::cli::set_command_line(argc, argv);
  CLI::App app{"joule " JOULE_VERSION " - measure, analyze and optimize neural networks (ONNX)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("joule ") + JOULE_VERSION);
  std::map<CLI::App*, joule::cli::Action> actions;
  auto add = [&](const char* name, const char* desc, joule::cli::Action (*fn)(CLI::App&)) {
    CLI::App* sub = app.add_subcommand(name, desc);
    actions[sub] = fn(*sub);
  };
  add("devices", "List the CPU and the GPUs joule can run on (--device), and whether CUDA is built in", joule::cli::add_devices);
  add("info", "Summarise a model: inputs/outputs, op histogram, parameters, MACs/FLOPs per node", joule::cli::add_info);
  add("run", "Run a model on inputs (.npy or TensorProto .pb) and write its outputs as .npy", joule::cli::add_run);
  add("bench", "Time whole-model latency: warm-up, repeated runs, median/mean/std/percentiles", joule::cli::add_bench);
  add("profile", "Profile per layer: latency, FLOP/s vs peak, energy; sweeps; CSV/JSON/Chrome trace", joule::cli::add_profile);
  add("energy", "Energy sources: probe what this machine has; calibrate the estimator", joule::cli::add_energy);
  add("eval", "Accuracy (top-1/top-5) on labelled data: .npy, IDX, JPEG class folders, LMDB", joule::cli::add_eval);
  add("quantize", "Quantize (config YAML, calibration) and simulate with QDQ; write ONNX; FP32 vs quantized accuracy",
      joule::cli::add_quantize);
  add("sensitivity", "Per-layer quantization damage (SQNR, cosine, MSE), cumulative or isolated; CSV/JSON/SVG",
      joule::cli::add_sensitivity);
  add("automp", "Mixed precision: move the most sensitive layers up a precision ladder until accuracy holds",
      joule::cli::add_automp);
  add("compare", "Accuracy, latency, energy and size: FP32 against each quantization config, side by side",
      joule::cli::add_compare);
  add("train", "Train on joule's engine: losses, SGD/Adam/AdamW, schedules, BatchNorm train/frozen, checkpoints; "
              "writes the trained ONNX model",
      joule::cli::add_train);
  add("finetune", "LoRA fine-tuning: low-rank adapters on chosen layers trained, then merged into the weights",
      joule::cli::add_finetune);
  add("qat", "Quantization-aware training (ste, lsq, pact) from a quantization config; writes the QDQ model",
      joule::cli::add_qat);
  add("prune", "Prune: zero the smallest weights, or remove whole conv channels through the graph (smaller, faster)",
      joule::cli::add_prune);
  add("search", "Multi-objective search over per-layer precision and pruning, every trial measured (or predicted); "
                "the Pareto front with its configs",
      joule::cli::add_search);
  add("opdb", "Operator cost database: sweep operators, add models' layers, stats, export, coverage",
      joule::cli::add_opdb);
  add("predict", "Predict a model's latency and energy from the operator database (exact rows, regressor, roofline); "
                 "--validate against measured",
      joule::cli::add_predict);
  add("experiment", "Experiments: models x parameter grids x steps, each point kept in a results store; resumable",
      joule::cli::add_experiment);
  add("report", "One self-contained HTML report (tables, SVG plots) of an experiment or of runs in a results store",
      joule::cli::add_report);
  add("serve", "Dashboard over a results store: runs, filters, one run's details, two runs side by side, live progress",
      joule::cli::add_serve);
  add("data", "Dataset tools: convert a JPEG class folder to LMDB", joule::cli::add_data);
  add("graph", "Draw the model graph (.svg/.png/.pdf through Graphviz dot, .dot text, .txt listing)", joule::cli::add_graph);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    for (auto* sub : app.get_subcommands()) return actions.at(sub)();
  } catch (const joule::Error& e) {
    if (e.kind() == joule::Error::Kind::Cancelled) {
      fmt::print(stderr, "\njoule: interrupted\n");
      return 130;
    }
    fmt::print(stderr, "joule: error: {}\n", e.what());
    return e.is_user_error() ? 2 : 1;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "joule: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "joule: internal error: {}\n", e.what());
    return 1;
  }
  return 0;
}
