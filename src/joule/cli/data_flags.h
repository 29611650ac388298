#pragma once
// Data flags shared by eval, quantize and sensitivity: how a data SPEC becomes model inputs.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "joule/data/dataset.h"
#include "joule/ir/graph.h"
#include "joule/quant/qdq.h"

namespace joule::cli {

struct DataFlags {
  std::vector<float> mean, std;
  float scale = 1.0f / 255;
  int resize = 0;
};
void add_data_options(CLI::App& app, DataFlags& f);

// Opens SPEC for `g`'s single input. The sample shape is the input's shape without the batch;
// mean/std come from the flags, else from the model's sidecar JSON (`<model>.json`,
// "normalisation": {"mean", "std"}), else ImageNet's for 3-channel JPEG/LMDB data, else none.
// `how` receives a one-line description of the preprocessing used.
std::unique_ptr<data::Dataset> open_data(const std::string& spec, const ir::Graph& g, const std::string& model_path,
                                         const DataFlags& f, std::string* how = nullptr);

// Samples [0, limit) as model inputs (unreadable samples skipped with a note on stderr).
struct LoadedSamples {
  std::vector<std::map<std::string, Tensor>> inputs;
  std::vector<int64_t> labels;  // one per input when the dataset has labels
  size_t skipped = 0;
};
LoadedSamples load_samples(const data::Dataset& d, const std::string& input_name, size_t limit);

// A calibration sample stream over [0, limit) of `d` (read ahead on the loader thread).
quant::SampleFn sample_stream(const data::Dataset& d, const std::string& input_name, size_t limit);

}  // namespace joule::cli
