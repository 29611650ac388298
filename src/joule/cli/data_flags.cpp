#include "joule/cli/data_flags.h"

#include <fmt/format.h>

#include <filesystem>

#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/data/loader.h"

namespace joule::cli {

namespace {

std::vector<float> json_floats(const nlohmann::json& j) {
  if (j.is_number()) return {j.get<float>()};
  if (j.is_array()) return j.get<std::vector<float>>();
  return {};
}

bool is_jpeg_data(const std::string& spec) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(spec)) return false;
  if (fs::exists(fs::path(spec) / "data.mdb")) return true;
  for (auto& e : fs::directory_iterator(spec))
    if (e.is_directory()) return true;
  return false;
}

Tensor with_batch(const Tensor& t) {
  Shape s = t.shape();
  s.insert(s.begin(), 1);
  return t.reshaped(s);
}

}  // namespace

void add_data_options(CLI::App& app, DataFlags& f) {
  app.add_option("--mean", f.mean, "per-channel mean subtracted after scaling (default: the model's sidecar JSON)")
      ->delimiter(',');
  app.add_option("--std", f.std, "per-channel standard deviation divided by (default: the model's sidecar JSON)")
      ->delimiter(',');
  app.add_option("--scale", f.scale, "multiplier for integer pixels before mean/std")->capture_default_str();
  app.add_option("--resize", f.resize, "JPEG data: shorter side before the centre crop (default crop*256/224)");
}

std::unique_ptr<data::Dataset> open_data(const std::string& spec, const ir::Graph& g, const std::string& model_path,
                                         const DataFlags& f, std::string* how) {
  if (g.inputs.size() != 1)
    fail(fmt::format("data: the model has {} inputs; --data/--calib feed single-input models", g.inputs.size()));
  const ir::TensorType* t = g.type_of(g.inputs[0]);
  if (!t || !t->has_shape || t->dims.size() < 2)
    fail("data: input '" + g.inputs[0] + "' has no known shape; give --input-shape");
  data::Preprocess p;
  for (size_t i = 1; i < t->dims.size(); ++i) {
    if (!t->dims[i].is_static()) fail("data: input '" + g.inputs[0] + "' is " + t->str() + "; give --input-shape");
    p.sample_shape.push_back(t->dims[i].value);
  }
  p.scale = f.scale;
  p.resize = f.resize;
  p.mean = f.mean;
  p.std = f.std;
  std::string source = "flags";
  if (p.mean.empty() && p.std.empty()) {
    const std::filesystem::path side = std::filesystem::path(model_path).replace_extension(".json");
    if (std::filesystem::exists(side)) {
      try {
        const nlohmann::json j = nlohmann::json::parse(read_file(side.string()));
        if (j.contains("normalisation")) {
          p.mean = json_floats(j["normalisation"].value("mean", nlohmann::json()));
          p.std = json_floats(j["normalisation"].value("std", nlohmann::json()));
          source = side.filename().string();
        }
      } catch (const nlohmann::json::exception& e) {
        fail(side.string() + ": not valid JSON: " + e.what());
      }
    }
  }
  if (p.mean.empty() && p.std.empty() && p.sample_shape[0] == 3 && is_jpeg_data(spec)) {
    p.mean = {0.485f, 0.456f, 0.406f};
    p.std = {0.229f, 0.224f, 0.225f};
    source = "ImageNet default for 3-channel images";
  }
  if (p.mean.empty() != p.std.empty()) fail("data: give both --mean and --std, or neither");
  auto d = data::open_dataset(spec, p);
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

LoadedSamples load_samples(const data::Dataset& d, const std::string& input_name, size_t limit) {
  LoadedSamples r;
  const size_t n = limit ? std::min(limit, d.size()) : d.size();
  data::Loader loader(d, 0, n);
  while (std::optional<data::Sample> s = loader.next()) {
    if (!s->error.empty()) {
      fmt::print(stderr, "joule: skipping {}\n", s->error);
      ++r.skipped;
      continue;
    }
    r.inputs.push_back({{input_name, with_batch(s->input)}});
    if (d.has_labels()) r.labels.push_back(s->label);
  }
  if (r.inputs.empty()) fail("data: " + d.describe() + ": no readable samples");
  return r;
}

quant::SampleFn sample_stream(const data::Dataset& d, const std::string& input_name, size_t limit) {
  auto loader = std::make_shared<data::Loader>(d, 0, limit ? std::min(limit, d.size()) : d.size());
  return [loader, input_name](runtime::TensorMap& inputs) {
    while (std::optional<data::Sample> s = loader->next()) {
      if (!s->error.empty()) {
        fmt::print(stderr, "joule: skipping {}\n", s->error);
        continue;
      }
      inputs = {{input_name, with_batch(s->input)}};
      return true;
    }
    return false;
  };
}

}  // namespace joule::cli
