#pragma once
// Internal to the data layer: the per-format openers behind open_dataset and the helpers they share.
#include <memory>
#include <string>
#include <vector>

#include "joule/data/dataset.h"

namespace joule::data {

std::unique_ptr<Dataset> open_idx(const std::string& images_path, const Preprocess& p);
std::unique_ptr<Dataset> open_npy(const std::string& path, const Preprocess& p);
std::unique_ptr<Dataset> open_image_folder(const std::string& dir, const Preprocess& p);
std::unique_ptr<Dataset> open_lmdb(const std::string& dir, const Preprocess& p);

// Channel count of a sample shape for per-channel mean/std: C of [..,C,H,W], else 1.
int64_t channel_count(const Shape& sample_shape);
// Throws naming `where` unless mean/std have 0, 1 or `channels` entries and std has no zeros.
void check_normalisation(const Preprocess& p, int64_t channels, const std::string& where);
// In place over a C x per_channel buffer: x = (x - mean[c]) / std[c]. No scale: float .npy data
// is used as is, so only integer sources go through pixels_to_float.
void normalise(float* x, int64_t channels, int64_t per_channel, const Preprocess& p);
// Pixels -> float: x = px * scale, then normalise. `px` is C x per_channel.
void pixels_to_float(const uint8_t* px, float* x, int64_t channels, int64_t per_channel, const Preprocess& p);

// get() with an index past the end is a caller bug, not bad input: throws Internal.
void check_index(size_t i, size_t size, const std::string& what);

// "a.jpg" style lower-case extension test.
bool has_extension(const std::string& name, const std::vector<std::string>& exts);

// A class-folder listing shared by the folder reader and the LMDB converter.
struct FolderListing {
  std::vector<std::string> classes;  // sorted sub-folder names (empty folders included: labels stay stable)
  std::vector<std::string> files;    // full paths, grouped by class, sorted within a class
  std::vector<int64_t> labels;       // parallel to files
};
// Throws "DIR: ..." if DIR is not a directory or holds no JPEGs in its sub-folders.
FolderListing list_class_folders(const std::string& dir);

}  // namespace joule::data
