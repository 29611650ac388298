#pragma once
// Labelled input data for calibration and accuracy evaluation: one interface over IDX files,
// .npy arrays, ImageFolder-style JPEG class folders and LMDB files made by convert_to_lmdb.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "joule/core/tensor.h"

namespace joule::data {

struct Preprocess {
  std::vector<int64_t> sample_shape;  // one sample as the model wants it, WITHOUT batch: {1,28,28}, {3,224,224}
  float scale = 1.0f / 255;           // applied to integer pixels (uint8 images, uint8 .npy) before mean/std
  std::vector<float> mean, std;       // per channel (size 1 or C); empty = no normalisation
  int resize = 0;  // image folders/LMDB: shorter side before centre crop; 0 = round(crop*256/224)
};

struct Sample {
  Tensor input;        // float32 with shape sample_shape (undefined when error is set)
  int64_t label = -1;  // -1: no label
  std::vector<int64_t> labels;  // a stack of samples (a model whose batch is fixed above 1): one per row
  std::string error;   // non-empty: this sample could not be read ("PATH: not a JPEG (...)"); skip it
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual size_t size() const = 0;
  virtual Sample get(size_t i) const = 0;  // thread-safe for concurrent calls
  virtual bool has_labels() const = 0;
  // "IDX /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz: 10000 samples 28x28, labels 10 classes"
  virtual std::string describe() const = 0;
  virtual std::vector<std::string> class_names() const { return {}; }
  // A sample is fed to the model with a leading batch axis of 1; false when a sample is the
  // model's whole input (a model without a batch axis, as torchvision's detectors).
  virtual bool batched() const { return true; }
};

// SPEC: a .npy file; an IDX images file (.gz or raw); a directory holding IDX files (":train"/":test"
// suffix picks when both exist, e.g. "/usr/share/datasets/fashion-mnist:test"); a directory of class
// sub-folders of JPEGs (ImageNet/torchvision ImageFolder style, classes = sorted folder names); an LMDB
// directory (contains data.mdb) written by convert_to_lmdb. Anything else: fail("SPEC: ...why...").
std::unique_ptr<Dataset> open_dataset(const std::string& spec, const Preprocess& p);

// Arrays in memory (a Python caller's numpy arrays): `images` with the sample axis first
// (float32 used as is, float64 cast, uint8 treated as pixels: scale, then mean/std); `labels`
// integers, one per sample, or undefined for none. `what` names them in messages.
std::unique_ptr<Dataset> open_arrays(Tensor images, Tensor labels, const Preprocess& p,
                                     const std::string& what = "array");

// Class-folder dataset -> LMDB (stores the original JPEG bytes + label per record and a meta record with
// the class names; decoding happens at read time). Atomic: written to OUT.tmp-XXXX then renamed; on any
// error nothing is left at OUT. Returns the record count. Corrupt images are skipped and listed in
// `skipped` ("PATH: why"); `skipped` may be null.
size_t convert_to_lmdb(const std::string& folder, const std::string& out, std::vector<std::string>* skipped);

}  // namespace joule::data
