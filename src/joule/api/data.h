#pragma once
// Labelled data for a model: a dataset SPEC (.npy, IDX, JPEG class folders, LMDB) or arrays in
// memory, opened with the preprocessing the model wants.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "joule/api/model.h"
#include "joule/data/dataset.h"
#include "joule/quant/qdq.h"

namespace joule::api {

// --mean / --std / --scale / --resize.
struct DataOptions {
  std::vector<float> mean, std;  // per channel; empty: the model's sidecar JSON, else ImageNet's for
                                 // 3-channel JPEG/LMDB data, else none
  float scale = 1.0f / 255;      // integer pixels are multiplied by this before mean/std
  int resize = 0;                // JPEG data: shorter side before the centre crop (0: crop*256/224)
};

// Where samples come from: a SPEC, or arrays (images with the sample axis first; labels
// optional). Empty: none given.
struct DataSource {
  std::string spec;
  Tensor images, labels;
  static DataSource from_spec(std::string spec);
  static DataSource from_arrays(Tensor images, Tensor labels = {});
  bool empty() const { return spec.empty() && !images.defined(); }
  // The spec's absolute path, or "array[N,...] DTYPE:HASH" of the images' bytes (part of
  // calibration cache keys).
  std::string label() const;
};

// Opens `src` for `m`'s single input. The sample shape is the input's shape without the batch.
// `how` receives one line describing the preprocessing. `stack`: a model whose batch is fixed
// above 1 gets that many samples per entry (one run each); false where the caller makes its
// own batches (training).
std::unique_ptr<data::Dataset> open_data(const DataSource& src, const Model& m, const DataOptions& o,
                                         std::string* how = nullptr, bool stack = true);

// Samples [0, limit) (0: all) as model inputs (unreadable samples skipped with a note on stderr).
struct LoadedSamples {
  std::vector<runtime::TensorMap> inputs;
  std::vector<int64_t> labels;  // one per input when the dataset has labels
  size_t skipped = 0;
};
// A stack of samples (a model whose batch is fixed above 1) with labels fails when
// `want_labels` (per-sample accuracy needs one output per sample); otherwise its labels are left
// out.
LoadedSamples load_samples(const data::Dataset& d, const std::string& input_name, size_t limit, bool want_labels = true);

// A calibration sample stream over [0, limit) of `d` (read ahead on the loader thread).
quant::SampleFn sample_stream(const data::Dataset& d, const std::string& input_name, size_t limit);

}  // namespace joule::api
