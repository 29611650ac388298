#include "joule/data/evaluate.h"

#include <chrono>
#include <cstdio>

#include "joule/core/error.h"
#include "joule/data/loader.h"

namespace joule::data {

nlohmann::json EvalResult::to_json() const {
  nlohmann::json j{{"samples", samples}, {"skipped", skipped}, {"top1", top1_rate()}, {"top1_correct", top1},
                   {"classes", classes}, {"seconds", seconds}};
  if (classes >= 5) j["top5"] = top5_rate();
  return j;
}

namespace {
// Whether `label` is among the k largest of the n scores at p (ties count against it).
bool top_k(const float* p, int64_t n, int64_t label, int k) {
  if (label < 0 || label >= n)
    fail("evaluation: label " + std::to_string(label) + " is outside the model's " + std::to_string(n) + " outputs");
  int64_t greater = 0;
  for (int64_t i = 0; i < n; ++i) greater += p[i] > p[label];
  return greater < k;
}
}  // namespace

bool top_k_correct(const Tensor& scores, int64_t label, int k) { return top_k(scores.data<float>(), scores.numel(), label, k); }

runtime::TensorMap model_inputs(const runtime::Session& s, const Sample& sample, bool batched) {
  if (s.input_names().size() != 1)
    fail("data: the model has " + std::to_string(s.input_names().size()) +
         " inputs; datasets feed single-input models");
  Shape shape = sample.input.shape();
  if (batched) shape.insert(shape.begin(), 1);
  return {{s.input_names()[0], sample.input.reshaped(shape)}};
}

EvalResult evaluate(runtime::Session& s, const Dataset& d, size_t limit,
                    const std::function<void(size_t, size_t)>& progress) {
  if (!d.has_labels()) fail("evaluation: " + d.describe() + " has no labels");
  const size_t total = limit ? std::min(limit, d.size()) : d.size();
  EvalResult r;
  auto t0 = std::chrono::steady_clock::now();
  Loader loader(d, 0, total);
  size_t done = 0;  // dataset entries (a stack of samples counts once)
  while (std::optional<Sample> sample = loader.next()) {
    ++done;
    if (!sample->error.empty()) {
      std::fprintf(stderr, "joule: skipping %s\n", sample->error.c_str());
      ++r.skipped;
      continue;
    }
    runtime::TensorMap out = s.run(model_inputs(s, *sample, d.batched()));
    const Tensor& y = out.at(s.output_names().at(0));
    JOULE_CHECK(y.dtype() == DType::Float32, "evaluation: the model's first output is " + y.describe() +
                                                 ", expected float32 scores");
    if (sample->labels.empty()) {
      r.classes = y.numel();
      r.top1 += top_k_correct(y, sample->label, 1);
      r.top5 += top_k_correct(y, sample->label, 5);
      ++r.samples;
    } else {  // one output row per stacked sample
      const int64_t rows = static_cast<int64_t>(sample->labels.size());
      if (y.rank() < 1 || y.dim(0) != rows)
        fail("evaluation: " + std::to_string(rows) + " samples per run, but the model's first output is " + y.describe());
      r.classes = y.numel() / rows;
      for (int64_t i = 0; i < rows; ++i) {
        const float* row = y.data<float>() + i * r.classes;
        r.top1 += top_k(row, r.classes, sample->labels[static_cast<size_t>(i)], 1);
        r.top5 += top_k(row, r.classes, sample->labels[static_cast<size_t>(i)], 5);
        ++r.samples;
      }
    }
    if (progress) progress(done, total);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace joule::data
