#pragma once
// Running a model: once or a few times on given inputs (run), or timed after warm-up (bench).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "joule/api/hooks.h"
#include "joule/api/prepare.h"
#include "joule/profile/stats.h"

namespace joule::api {

// A tensor read from a .npy or ONNX TensorProto .pb file.
Tensor read_tensor(const std::string& path);
// Binds "FILE" (the next unbound input, in order) and "NAME=FILE" specs to the model's inputs;
// every input must be bound.
// With `graph`, an input it declares as a sequence or optional is read from a .pb SequenceProto
// or OptionalProto.
runtime::TensorMap read_inputs(const std::vector<std::string>& specs, const std::vector<std::string>& input_names,
                               const ir::Graph* graph = nullptr);

struct RunOptions {
  PrepareOptions prepare;
  runtime::TensorMap inputs;  // by input name; every input required
  int repeat = 1;             // runs; the outputs are the last run's
  // Count NaN and Inf in every node's outputs and report the first node that has any
  // (runtime::NumericsObserver); the runs then go node by node.
  bool check_numerics = false;
};

struct RunResult {
  std::string model;
  runtime::TensorMap outputs;
  std::vector<std::string> output_names;  // graph order
  std::vector<double> samples_ms;
  int threads = 0;
  size_t peak_activation_bytes = 0;
  nlohmann::json pipeline;
  PrecisionReport precision;
  nlohmann::json numerics;  // check_numerics: NumericsObserver::to_json(); else null
  std::string numerics_summary;  // its one line
  // Outputs as dtype, shape and the first values (not the data); times; memory.
  nlohmann::json to_json() const;
};
// The first `n` values of an output, for printing: numbers, strings, or for a sequence or an
// optional the descriptions of its items.
nlohmann::json first_values(const Tensor& t, int64_t n = 6);
// The files `-o DIR` writes for output `name`: DIR/NAME.npy for a tensor, DIR/NAME.K.npy for item
// K of a sequence, the held value of an optional (nothing when it is empty). BadInput for string
// tensors (.npy holds numbers), before anything is written.
std::vector<std::pair<std::string, Tensor>> output_files(const std::string& dir, const std::string& name, const Tensor& t);
// Weights are held once (PrepareOptions::release_packed): pass the model as an rvalue and the
// originals of the packed weights are freed while the session is built.
RunResult run(Model m, const RunOptions& o, const Hooks& hooks = {});

struct BenchOptions {
  PrepareOptions prepare;
  runtime::TensorMap inputs;  // empty: seeded random inputs at the model's shapes
  int warmup = 5, runs = 30;
  // One more run before the timed ones, with a runtime::NumericsObserver: NaN and Inf counted in
  // every node's outputs and the first node that has any named (the timed runs stay plain).
  bool check_numerics = false;
};

struct BenchResult {
  std::string model;  // path (or name when not from a file)
  int threads = 0, warmup = 0, runs = 0;
  profile::Stats latency_ms;
  std::vector<double> samples_ms;
  size_t peak_activation_bytes = 0;
  std::string passes, int8;
  size_t nodes_before = 0, nodes_after = 0;
  PrecisionReport precision;
  nlohmann::json numerics;       // check_numerics: NumericsObserver::to_json(); else null
  std::string numerics_summary;  // check_numerics: one line
  nlohmann::json to_json() const;  // what `joule bench --format json` prints
};
BenchResult bench(Model m, const BenchOptions& o, const Hooks& hooks = {});  // as run: weights held once

// The label reports use for a model: its file, else its name.
std::string model_label(const Model& m);

}  // namespace joule::api
