// .npy files and arrays in memory: the first axis is the sample axis. float data is taken as
// already preprocessed; uint8 data is treated as pixels (scale, then mean/std).
#include <cstring>
#include <filesystem>

#include "joule/core/npy.h"
#include "joule/data/readers.h"

namespace joule::data {

namespace {

namespace fs = std::filesystem;

// Drops one leading 1. Two shapes agree when they are equal after this on both sides, so a file
// sample of [28,28] or [1,28,28] fits a model sample of [1,28,28] or [28,28], while [1,1,28,28] does
// not fit [1,28,28]: one size-1 axis is a common export slip, two is a different layout.
Shape drop_leading_one(const Shape& s) {
  if (!s.empty() && s[0] == 1) return Shape(s.begin() + 1, s.end());
  return s;
}

// Sibling label files, most specific first: "<stem>_labels.npy", "<stem>.labels.npy", "labels.npy".
std::string find_labels_file(const std::string& path) {
  const fs::path p(path);
  const std::string stem = p.stem().string();
  std::error_code ec;
  for (const std::string& name : {stem + "_labels.npy", stem + ".labels.npy", std::string("labels.npy")}) {
    const fs::path cand = p.parent_path() / name;
    if (cand.filename() == p.filename()) continue;  // the data file itself is "labels.npy"
    if (fs::is_regular_file(cand, ec)) return cand.string();
  }
  return "";
}

// Samples along the first axis of an array held in memory (from a .npy file or a caller).
class ArrayDataset : public Dataset {
 public:
  // `what` names the data in messages ("NPY PATH", "array"); `labels_what` the labels
  // ("" when `labels` is undefined: no labels).
  ArrayDataset(Tensor data, Tensor labels, const Preprocess& p, std::string what, std::string labels_what)
      : what_(std::move(what)), labels_what_(std::move(labels_what)), pre_(p), data_(std::move(data)) {
    if (data_.dtype() == DType::Float64) data_ = data_.cast(DType::Float32);
    if (data_.dtype() != DType::Float32 && data_.dtype() != DType::UInt8)
      fail(what_ + ": dtype " + dtype_name(data_.dtype()) + " is not supported (float32, float64 or uint8)");
    if (data_.rank() < 1) fail(what_ + ": a 0-d array holds no samples (the first axis is the sample axis)");
    n_ = data_.dim(0);
    const Shape file_sample(data_.shape().begin() + 1, data_.shape().end());
    if (pre_.sample_shape.empty()) pre_.sample_shape = file_sample;
    if (drop_leading_one(file_sample) != drop_leading_one(pre_.sample_shape))
      fail(what_ + ": samples have shape " + shape_str(file_sample) + " (array " + shape_str(data_.shape()) +
           ") but the model wants " + shape_str(pre_.sample_shape));
    per_sample_ = shape_numel(file_sample);
    if (data_.dtype() == DType::UInt8) check_normalisation(pre_, channel_count(pre_.sample_shape), what_);
    if (labels.defined()) set_labels(labels);
  }

  size_t size() const override { return static_cast<size_t>(n_); }
  bool has_labels() const override { return !labels_.empty(); }

  Sample get(size_t i) const override {
    check_index(i, size(), what_);
    Sample s;
    s.input = Tensor(DType::Float32, pre_.sample_shape);
    float* x = s.input.data<float>();
    if (data_.dtype() == DType::Float32) {
      std::memcpy(x, data_.data<float>() + i * per_sample_, per_sample_ * sizeof(float));
    } else {
      const int64_t c = channel_count(pre_.sample_shape);
      pixels_to_float(data_.data<uint8_t>() + i * per_sample_, x, c, per_sample_ / c, pre_);
    }
    if (has_labels()) s.label = labels_[i];
    return s;
  }

  std::string describe() const override {
    std::string d = what_ + ": " + std::to_string(n_) + " samples " + dtype_name(data_.dtype()) +
                    shape_str(pre_.sample_shape);
    d += data_.dtype() == DType::Float32 ? " (used as is), " : ", ";
    if (!has_labels()) return d + "no labels";
    return d + "labels " + std::to_string(classes_) + " classes from " + labels_what_;
  }

 private:
  void set_labels(const Tensor& t) {
    if (!is_integer(t.dtype()))
      fail(labels_what_ + ": labels must be integers (int64, int32 or uint8), got " + dtype_name(t.dtype()));
    if (t.numel() != n_ || (t.rank() >= 1 && t.dim(0) != n_))
      fail(labels_what_ + ": " + std::to_string(t.numel()) + " labels (shape " + shape_str(t.shape()) + ") but " +
           what_ + " has " + std::to_string(n_) + " samples");
    labels_.resize(static_cast<size_t>(n_));
    for (int64_t i = 0; i < n_; ++i) {
      labels_[i] = t.value_as_int(i);
      if (labels_[i] < 0)
        fail(labels_what_ + ": label " + std::to_string(labels_[i]) + " at index " + std::to_string(i) +
             " is negative");
      classes_ = std::max(classes_, labels_[i] + 1);
    }
  }

  std::string what_, labels_what_;
  Preprocess pre_;
  Tensor data_;
  int64_t n_ = 0, per_sample_ = 0, classes_ = 0;
  std::vector<int64_t> labels_;
};

}  // namespace

std::unique_ptr<Dataset> open_npy(const std::string& path, const Preprocess& p) {
  Tensor data = load_npy(path);
  const std::string labels_path = find_labels_file(path);
  Tensor labels = labels_path.empty() ? Tensor() : load_npy(labels_path);
  return std::make_unique<ArrayDataset>(std::move(data), std::move(labels), p, "NPY " + path, labels_path);
}

std::unique_ptr<Dataset> open_arrays(Tensor images, Tensor labels, const Preprocess& p, const std::string& what) {
  return std::make_unique<ArrayDataset>(std::move(images), std::move(labels), p, what, what + " labels");
}

}  // namespace joule::data
