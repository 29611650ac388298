#pragma once
// Accuracy of a classifier on a labelled dataset: top-1 and top-5 of the model's first output
// (one sample per run, batch 1; or a stack of samples per run, one output row and one label
// each, for a model whose batch is fixed), samples read ahead on the loader thread.
#include <functional>

#include "joule/data/dataset.h"
#include "joule/runtime/session.h"

namespace joule::data {

struct EvalResult {
  size_t samples = 0;   // evaluated
  size_t skipped = 0;   // unreadable samples (reported on stderr with their paths)
  size_t top1 = 0, top5 = 0;
  int64_t classes = 0;  // size of the output
  double seconds = 0;
  double top1_rate() const { return samples ? static_cast<double>(top1) / static_cast<double>(samples) : 0; }
  double top5_rate() const { return samples ? static_cast<double>(top5) / static_cast<double>(samples) : 0; }
  nlohmann::json to_json() const;
};

// Whether `label` is among the k largest of one sample's scores (ties count against it).
bool top_k_correct(const Tensor& scores, int64_t label, int k);

// The model input for one sample: its tensor with a batch dimension of 1 in front (when the
// dataset's samples are batched; else the tensor as it is: a whole input, or a stack of rows).
runtime::TensorMap model_inputs(const runtime::Session& s, const Sample& sample, bool batched = true);

// Evaluates samples [0, limit) (0: all). Throws BadInput when the dataset has no labels.
EvalResult evaluate(runtime::Session& s, const Dataset& d, size_t limit,
                    const std::function<void(size_t done, size_t total)>& progress = {});

}  // namespace joule::data
