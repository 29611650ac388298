#pragma once
// What the commands share: flags bound onto the library's option structs, the status line drawn
// from a workflow's progress, Ctrl-C as cancellation, and number formatting.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "joule/api/data.h"
#include "joule/api/hooks.h"
#include "joule/api/prepare.h"

namespace joule::cli {

std::string human_count(double v);   // 1.82G, 11.7M, 932
std::string human_bytes(double v);   // 44.6 MB
std::string shorten(const std::string& s, size_t width);  // "~" + the last width-1 characters

// "MODEL" positional ('default' = the bundled Fashion-MNIST CNN).
void add_model_arg(CLI::App& app, std::string& model);
// --int8 real|simulated, on every command that runs a model.
void add_int8_option(CLI::App& app, std::string& mode);
// --precision fp32|bf16 and --bf16-min-sqnr DB (api/precision.h).
void add_precision_options(CLI::App& app, std::string& precision, double& min_sqnr_db);
// --algo / --algo-file / --tuning-cache.
void add_algo_options(CLI::App& app, api::AlgoOptions& o);
// --device cpu|cuda[:N] and --gpu-math fp32|tf32|fp16|bf16.
void add_device_options(CLI::App& app, std::string& device, std::string& gpu_math, std::vector<std::string>& gpu_fp32);
// --threads N (0: every core).
void add_threads_option(CLI::App& app, int& threads);
// --threads / --passes / --int8 / --algo...: how a model is prepared to run.
void add_prepare_options(CLI::App& app, api::PrepareOptions& o, const std::string& passes_help);
// --mean / --std / --scale / --resize.
void add_data_options(CLI::App& app, api::DataOptions& o);
// --input-shape NAME=1,3,224,224 (repeatable), parsed into `shapes` after the flags are read.
struct ShapeFlags {
  std::vector<std::string> specs;
  std::map<std::string, Shape> parse() const;
};
void add_input_shape_option(CLI::App& app, ShapeFlags& f);

// --store URL: record the command's result in a results store (experiment/store.h).
void add_store_option(CLI::App& app, std::string& url);
// When `url` is set, records `result` (the command's JSON) as a run of `command` on `model`, with
// the command line as its parameters.
void record_run(const std::string& url, const std::string& command, const std::string& model,
                const nlohmann::json& result);
// The process's command line (set by main) for records.
void set_command_line(int argc, char** argv);

// Hooks for a command: a one-line status on stderr (only on a terminal and unless `quiet`),
// and cancellation when the user presses Ctrl-C (a second Ctrl-C ends the process at once).
api::Hooks terminal_hooks(bool quiet = false);
// Clears the status line.
void end_status(bool quiet = false);

}  // namespace joule::cli
