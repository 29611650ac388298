#include "joule/api/data.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>

#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/core/npy.h"
#include "joule/data/loader.h"

namespace joule::api {

namespace {

std::vector<float> json_floats(const nlohmann::json& j) {
  if (j.is_number()) return {j.get<float>()};
  if (j.is_array()) return j.get<std::vector<float>>();
  return {};
}

bool is_jpeg_data(const std::string& spec) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(spec, ec)) return false;
  if (fs::exists(fs::path(spec) / "data.mdb")) return true;
  for (auto& e : fs::directory_iterator(spec))
    if (e.is_directory()) return true;
  return false;
}

// A sample as the model's input: with a batch axis of 1, unless the dataset's samples are
// whole inputs.
Tensor as_input(bool batched, const Tensor& t) {
  if (!batched) return t;
  Shape s = t.shape();
  s.insert(s.begin(), 1);
  return t.reshaped(s);
}

// The samples of `inner` are the model's whole inputs.
class Unbatched final : public data::Dataset {
 public:
  explicit Unbatched(std::unique_ptr<data::Dataset> inner) : inner_(std::move(inner)) {}
  size_t size() const override { return inner_->size(); }
  data::Sample get(size_t i) const override { return inner_->get(i); }
  bool has_labels() const override { return inner_->has_labels(); }
  std::string describe() const override { return inner_->describe() + " (each sample a whole input: no batch axis)"; }
  std::vector<std::string> class_names() const override { return inner_->class_names(); }
  bool batched() const override { return false; }

 private:
  std::unique_ptr<data::Dataset> inner_;
};

// A model whose batch is fixed above 1 (exported without a dynamic batch): `rows` consecutive
// samples of `inner` stacked into each input; a last partial stack is dropped (said in
// describe()). A stack with an unreadable sample is skipped whole.
class Stacked final : public data::Dataset {
 public:
  Stacked(std::unique_ptr<data::Dataset> inner, int64_t rows) : inner_(std::move(inner)), rows_(rows) {}
  size_t size() const override { return inner_->size() / static_cast<size_t>(rows_); }
  data::Sample get(size_t i) const override {
    std::vector<Tensor> parts;
    data::Sample out;
    for (int64_t r = 0; r < rows_; ++r) {
      data::Sample s = inner_->get(i * static_cast<size_t>(rows_) + static_cast<size_t>(r));
      if (!s.error.empty()) return data::Sample{Tensor(), -1, {}, s.error};
      parts.push_back(s.input);
      out.labels.push_back(s.label);
    }
    Shape shape = parts[0].shape();
    shape.insert(shape.begin(), rows_);
    out.input = Tensor(DType::Float32, shape);
    const size_t bytes = parts[0].nbytes();
    for (size_t r = 0; r < parts.size(); ++r)
      std::memcpy(static_cast<std::byte*>(out.input.raw()) + r * bytes, parts[r].raw(), bytes);
    if (!inner_->has_labels()) out.labels.clear();
    return out;
  }
  bool has_labels() const override { return inner_->has_labels(); }
  std::string describe() const override {
    const size_t left = inner_->size() % static_cast<size_t>(rows_);
    return inner_->describe() + fmt::format(" (stacked {} per run: the model's batch is fixed at {}{})", rows_, rows_,
                                            left ? fmt::format("; the last {} samples dropped", left) : "");
  }
  std::vector<std::string> class_names() const override { return inner_->class_names(); }
  bool batched() const override { return false; }

 private:
  std::unique_ptr<data::Dataset> inner_;
  int64_t rows_;
};

// Does a model input of static shape `whole` lack a batch axis, as far as the data tells? Yes
// when the data's samples have the whole shape: arrays or a .npy file of [K, whole...], or JPEG
// images for a [3 or 1, H, W] input (images are never batched there).
bool input_without_batch(const DataSource& src, const Shape& whole) {
  auto samples_are = [&](const Shape& data) {
    return data.size() == whole.size() + 1 && Shape(data.begin() + 1, data.end()) == whole;
  };
  if (src.images.defined()) return samples_are(src.images.shape());
  const std::string& spec = src.spec;
  // (A .npy file is read here to see its shape: only for inputs of rank 3 or less, where an input
  // without a batch axis is plausible -- an image -- and the file stays small.)
  if (whole.size() <= 3 && spec.size() > 4 && spec.compare(spec.size() - 4, 4, ".npy") == 0 &&
      std::filesystem::is_regular_file(spec))
    return samples_are(load_npy(spec).shape());
  return whole.size() == 3 && (whole[0] == 3 || whole[0] == 1) && is_jpeg_data(spec);
}

}  // namespace

DataSource DataSource::from_spec(std::string spec) {
  DataSource d;
  d.spec = std::move(spec);
  return d;
}

DataSource DataSource::from_arrays(Tensor images, Tensor labels) {
  DataSource d;
  d.images = std::move(images);
  d.labels = std::move(labels);
  return d;
}

std::string DataSource::label() const {
  if (!spec.empty()) return std::filesystem::absolute(spec).string();
  if (!images.defined()) return "";
  const uint64_t h = fnv1a64(images.raw(), images.nbytes());  // arrays of one shape stay apart
  return fmt::format("array{} {}:{:016x}", shape_str(images.shape()), dtype_name(images.dtype()), h);
}

std::unique_ptr<data::Dataset> open_data(const DataSource& src, const Model& m, const DataOptions& o, std::string* how,
                                         bool stack) {
  if (src.empty()) fail("data: none given");
  const ir::Graph& g = m.graph();
  if (g.inputs.size() != 1)
    fail(fmt::format("data: the model has {} inputs; datasets feed single-input models", g.inputs.size()));
  const ir::TensorType* t = g.type_of(g.inputs[0]);
  if (!t || !t->has_shape || t->dims.size() < 2)
    fail("data: input '" + g.inputs[0] + "' has no known shape; give an input shape");
  data::Preprocess p;
  for (size_t i = 1; i < t->dims.size(); ++i) {
    if (!t->dims[i].is_static()) fail("data: input '" + g.inputs[0] + "' is " + t->str() + "; give an input shape");
    p.sample_shape.push_back(t->dims[i].value);
  }
  const bool unbatched = t->is_static() && input_without_batch(src, t->static_shape());
  if (unbatched) p.sample_shape = t->static_shape();
  p.scale = o.scale;
  p.resize = o.resize;
  p.mean = o.mean;
  p.std = o.std;
  std::string source = "given";
  if (p.mean.empty() && p.std.empty() && !m.sidecar().empty()) {
    try {
      const nlohmann::json j = nlohmann::json::parse(read_file(m.sidecar()));
      if (j.contains("normalisation")) {
        p.mean = json_floats(j["normalisation"].value("mean", nlohmann::json()));
        p.std = json_floats(j["normalisation"].value("std", nlohmann::json()));
        source = std::filesystem::path(m.sidecar()).filename().string();
      }
    } catch (const nlohmann::json::exception& e) {
      fail(m.sidecar() + ": not valid JSON: " + e.what());
    }
  }
  if (p.mean.empty() && p.std.empty() && p.sample_shape[0] == 3 && !src.spec.empty() && is_jpeg_data(src.spec)) {
    p.mean = {0.485f, 0.456f, 0.406f};
    p.std = {0.229f, 0.224f, 0.225f};
    source = "ImageNet default for 3-channel images";
  }
  if (p.mean.empty() != p.std.empty()) fail("data: give both mean and std, or neither");
  std::unique_ptr<data::Dataset> d = src.spec.empty() ? data::open_arrays(src.images, src.labels, p) : data::open_dataset(src.spec, p);
  if (unbatched) d = std::make_unique<Unbatched>(std::move(d));
  else if (stack && t->dims[0].is_static() && t->dims[0].value > 1) d = std::make_unique<Stacked>(std::move(d), t->dims[0].value);
  if (how) {
    auto list = [](const std::vector<float>& v) {
      std::string s;
      for (float x : v) s += (s.empty() ? "" : ",") + fmt::format("{:g}", x);
      return s;
    };
    *how = p.mean.empty() ? fmt::format("integer pixels x {:g}, no mean/std", p.scale)
                          : fmt::format("integer pixels x {:g}, mean {} std {} ({})", p.scale, list(p.mean),
                                        list(p.std), source);
  }
  return d;
}

LoadedSamples load_samples(const data::Dataset& d, const std::string& input_name, size_t limit, bool want_labels) {
  LoadedSamples r;
  const size_t n = limit ? std::min(limit, d.size()) : d.size();
  data::Loader loader(d, 0, n);
  while (std::optional<data::Sample> s = loader.next()) {
    if (!s->error.empty()) {
      fmt::print(stderr, "joule: skipping {}\n", s->error);
      ++r.skipped;
      continue;
    }
    if (!s->labels.empty() && want_labels)
      fail("data: " + d.describe() + ": accuracy per sample needs a model with batch 1 or a dynamic batch (joule eval and "
           "calibration take stacked samples)");
    r.inputs.push_back({{input_name, as_input(d.batched(), s->input)}});
    if (d.has_labels() && s->labels.empty()) r.labels.push_back(s->label);
  }
  if (r.inputs.empty()) fail("data: " + d.describe() + ": no readable samples");
  return r;
}

quant::SampleFn sample_stream(const data::Dataset& d, const std::string& input_name, size_t limit) {
  auto loader = std::make_shared<data::Loader>(d, 0, limit ? std::min(limit, d.size()) : d.size());
  return [loader, input_name, batched = d.batched()](runtime::TensorMap& inputs) {
    while (std::optional<data::Sample> s = loader->next()) {
      if (!s->error.empty()) {
        fmt::print(stderr, "joule: skipping {}\n", s->error);
        continue;
      }
      inputs = {{input_name, as_input(batched, s->input)}};
      return true;
    }
    return false;
  };
}

}  // namespace joule::api
