#include "joule/cli/util.h"
#include "joule/experiment/runner.h"

#include <fmt/core.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>

namespace joule::cli {

std::string human_count(double v) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}{}", v, units[u]);
}

std::string shorten(const std::string& s, size_t width) {
  return s.size() <= width ? s : "~" + s.substr(s.size() - width + 1);
}

std::string human_bytes(double v) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

void add_model_arg(CLI::App& app, std::string& model) {
  app.add_option("model", model, "ONNX model file ('default' = the bundled Fashion-MNIST CNN)")->required();
}

void add_int8_option(CLI::App& app, std::string& mode) {
  app.add_option("--int8", mode,
                 "quantized (QDQ) models: real (integer kernels where the pattern allows) or simulated (float QDQ)")
      ->check(CLI::IsMember({"real", "simulated"}))
      ->capture_default_str();
}

void add_precision_options(CLI::App& app, std::string& precision, double& min_sqnr_db) {
  app.add_option("--precision", precision,
                 "Conv/MatMul/Gemm arithmetic: fp32, or bf16 (oneDNN bfloat16 kernels, float32 sums; needs "
                 "AVX512-BF16 or AMX)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  app.add_option("--bf16-min-sqnr", min_sqnr_db,
                 "bf16: layers whose isolated output SQNR (bf16 vs fp32 kernel, same inputs, on the run's input) "
                 "is below this many dB stay fp32 (0: no check)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

void add_algo_options(CLI::App& app, api::AlgoOptions& o) {
  app.add_option("--algo", o.rules,
                 "kernel algorithms: guess (default), auto (measure, cached), reference, CLASS=ALGO[,ALGO...] "
                 "(conv, gemm, matmul) or NODE=ALGO; repeatable");
  app.add_option("--algo-file", o.file, "YAML file of TARGET: ALGO or [ALGO, ...] (and default: guess|auto|reference)");
  app.add_option("--tuning-cache", o.tuning_cache,
                 "tuning cache for --algo auto (default $JOULE_TUNING_CACHE or ~/.cache/joule/tuning.json)");
}

void add_threads_option(CLI::App& app, int& threads) {
  app.add_option("--threads", threads, "intra-op threads (0: every core)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

void add_device_options(CLI::App& app, std::string& device, std::string& gpu_math, std::vector<std::string>& gpu_fp32) {
  app.add_option("--device", device,
                 "cpu, cuda or cuda:N: nodes a GPU kernel runs go to that GPU, the rest stay on the CPU with explicit "
                 "copies (joule devices lists the GPUs)")
      ->capture_default_str();
  app.add_option("--gpu-math", gpu_math,
                 "GPU arithmetic: fp32 (no tensor cores), tf32 (Conv/MatMul/Gemm on tensor cores), fp16 or bf16 (every "
                 "GPU activation stored in half precision, tensor cores accumulating in float32; results float32)")
      ->check(CLI::IsMember({"fp32", "tf32", "fp16", "bf16"}))
      ->capture_default_str();
  app.add_option("--gpu-fp32", gpu_fp32,
                 "with --gpu-math fp16|bf16: GPU nodes kept in float32 (names, comma-separated; e.g. the layers joule "
                 "automp keeps at fp32), cast where their values meet half ones")
      ->delimiter(',');
}

void add_prepare_options(CLI::App& app, api::PrepareOptions& o, const std::string& passes_help) {
  add_threads_option(app, o.threads);
  add_device_options(app, o.device, o.gpu_math, o.gpu_fp32);
  app.add_option("--passes", o.passes, passes_help)->capture_default_str();
  add_int8_option(app, o.int8);
  add_precision_options(app, o.precision, o.bf16_min_sqnr_db);
  add_algo_options(app, o.algo);
}

void add_data_options(CLI::App& app, api::DataOptions& o) {
  app.add_option("--mean", o.mean, "per-channel mean subtracted after scaling (default: the model's sidecar JSON)")
      ->delimiter(',');
  app.add_option("--std", o.std, "per-channel standard deviation divided by (default: the model's sidecar JSON)")
      ->delimiter(',');
  app.add_option("--scale", o.scale, "multiplier for integer pixels before mean/std")->capture_default_str();
  app.add_option("--resize", o.resize, "JPEG data: shorter side before the centre crop (default crop*256/224)");
}

std::map<std::string, Shape> ShapeFlags::parse() const {
  std::map<std::string, Shape> m;
  for (const std::string& s : specs) {
    auto [name, shape] = api::parse_input_shape(s);
    m[name] = shape;
  }
  return m;
}

void add_input_shape_option(CLI::App& app, ShapeFlags& f) {
  app.add_option("--input-shape", f.specs, "NAME=1,3,224,224 (or one shape for a one-input model): resolve symbolic dims");
}

namespace {
std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) {
  g_interrupted = true;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}
}  // namespace

api::Hooks terminal_hooks(bool quiet) {
  std::signal(SIGINT, on_sigint);
  api::Hooks h;
  h.cancelled = [] { return g_interrupted.load(); };
  if (!quiet && isatty(2))
    h.progress = [last = std::chrono::steady_clock::time_point{}](const api::Progress& p) mutable {
      const auto now = std::chrono::steady_clock::now();
      if (p.message.empty() || (now - last < std::chrono::milliseconds(100) && p.done < p.total)) return;
      last = now;
      fmt::print(stderr, "\r{:<70}", p.message);
    };
  return h;
}

void end_status(bool quiet) {
  if (!quiet && isatty(2)) fmt::print(stderr, "\r{:<70}\r", "");
}

namespace {
std::vector<std::string>& command_line() {
  static std::vector<std::string> args;
  return args;
}
}  // namespace

void set_command_line(int argc, char** argv) { command_line().assign(argv, argv + argc); }

void add_store_option(CLI::App& app, std::string& url) {
  app.add_option("--store", url, "record this run in a results store (an SQLite file; see joule report)");
}

void record_run(const std::string& url, const std::string& command, const std::string& model,
                const nlohmann::json& result) {
  if (url.empty()) return;
  std::string line;
  for (const std::string& a : command_line())
    line += (line.empty() ? "" : " ") + (a.find_first_of(" \t'\"") == std::string::npos ? a : "'" + a + "'");
  const experiment::RunRow r = experiment::record_command(url, command, model, {{"command_line", line}}, result);
  fmt::print(stderr, "recorded as run {} in {}\n", r.id, url);
}

}  // namespace joule::cli
