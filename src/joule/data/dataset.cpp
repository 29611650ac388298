#include "joule/data/dataset.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "joule/data/readers.h"

namespace joule::data {

namespace fs = std::filesystem;

int64_t channel_count(const Shape& s) { return s.size() >= 3 ? s[s.size() - 3] : 1; }

void check_normalisation(const Preprocess& p, int64_t channels, const std::string& where) {
  auto ok = [&](size_t n) { return n == 0 || n == 1 || static_cast<int64_t>(n) == channels; };
  if (!ok(p.mean.size()) || !ok(p.std.size()))
    fail(where + ": mean/std need 1 or " + std::to_string(channels) + " values, got " +
         std::to_string(p.mean.size()) + " and " + std::to_string(p.std.size()));
  for (float s : p.std)
    if (s == 0.0f) fail(where + ": std must not be zero");
}

void normalise(float* x, int64_t channels, int64_t per_channel, const Preprocess& p) {
  if (p.mean.empty() && p.std.empty()) return;
  for (int64_t c = 0; c < channels; ++c) {
    const float m = p.mean.empty() ? 0.0f : p.mean[p.mean.size() == 1 ? 0 : c];
    const float s = p.std.empty() ? 1.0f : p.std[p.std.size() == 1 ? 0 : c];
    float* xc = x + c * per_channel;
    for (int64_t i = 0; i < per_channel; ++i) xc[i] = (xc[i] - m) / s;
  }
}

void pixels_to_float(const uint8_t* px, float* x, int64_t channels, int64_t per_channel, const Preprocess& p) {
  const int64_t n = channels * per_channel;
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(px[i]) * p.scale;
  normalise(x, channels, per_channel, p);
}

void check_index(size_t i, size_t size, const std::string& what) {
  if (i >= size)
    fail_internal(what + ": sample " + std::to_string(i) + " out of range (" + std::to_string(size) +
                  " samples)");
}

bool has_extension(const std::string& name, const std::vector<std::string>& exts) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& e : exts)
    if (lower.size() > e.size() && lower.compare(lower.size() - e.size(), e.size(), e) == 0) return true;
  return false;
}

namespace {

bool is_idx_images_name(const std::string& name) {
  return name.find("images-idx3") != std::string::npos || name.find("images.idx3") != std::string::npos;
}

// Which split an IDX file belongs to, from the LeCun naming: "train-..." and "t10k-..." (or "test-...").
std::string idx_split(const std::string& name) {
  if (name.rfind("train", 0) == 0) return "train";
  if (name.rfind("t10k", 0) == 0 || name.rfind("test", 0) == 0) return "test";
  return "";
}

std::unique_ptr<Dataset> open_idx_directory(const std::string& spec, const std::string& dir,
                                            const std::string& split, const std::vector<std::string>& images,
                                            const Preprocess& p) {
  std::vector<std::string> picked;
  for (const auto& f : images)
    if (split.empty() || idx_split(fs::path(f).filename().string()) == split) picked.push_back(f);
  if (picked.empty())
    fail(spec + ": no IDX images file for split '" + split + "' in " + dir +
         " (expected a name starting with " + (split == "train" ? "train-" : "t10k- or test-") + ")");
  if (picked.size() > 1) {
    std::vector<std::string> splits;
    for (const auto& f : picked) {
      std::string s = idx_split(fs::path(f).filename().string());
      if (!s.empty() && std::find(splits.begin(), splits.end(), s) == splits.end()) splits.push_back(s);
    }
    if (split.empty() && splits.size() > 1) {
      std::string choices;
      for (const auto& s : splits) choices += (choices.empty() ? "" : " or ") + dir + ":" + s;
      fail(spec + ": holds several IDX image sets; pick one with " + choices);
    }
    // The same set twice (raw and .gz): the raw file needs no inflating.
    std::stable_sort(picked.begin(), picked.end(), [](const std::string& a, const std::string& b) {
      return !has_extension(a, {".gz"}) && has_extension(b, {".gz"});
    });
  }
  return open_idx(picked.front(), p);
}

}  // namespace

std::unique_ptr<Dataset> open_dataset(const std::string& spec, const Preprocess& p) {
  std::error_code ec;
  std::string path = spec, split;
  for (const char* s : {"train", "test"}) {
    const std::string suffix = std::string(":") + s;
    if (spec.size() > suffix.size() && spec.compare(spec.size() - suffix.size(), suffix.size(), suffix) == 0 &&
        !fs::exists(spec, ec)) {
      path = spec.substr(0, spec.size() - suffix.size());
      split = s;
    }
  }
  if (!fs::exists(path, ec)) fail(spec + ": no such file or directory");

  if (!fs::is_directory(path, ec)) {
    if (!split.empty()) fail(spec + ": ':" + split + "' only applies to a directory of IDX files");
    if (has_extension(path, {".npy"})) return open_npy(path, p);
    // Not .npy: the IDX reader checks the magic and says what it found.
    return open_idx(path, p);
  }

  if (fs::exists(fs::path(path) / "data.mdb", ec)) {
    if (!split.empty()) fail(spec + ": ':" + split + "' only applies to a directory of IDX files");
    return open_lmdb(path, p);
  }
  std::vector<std::string> idx_images;
  bool has_subdirs = false;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file(ec) && is_idx_images_name(name)) idx_images.push_back(e.path().string());
    if (e.is_directory(ec) && name[0] != '.') has_subdirs = true;
  }
  if (ec) fail(spec + ": cannot list directory: " + ec.message());
  std::sort(idx_images.begin(), idx_images.end());
  if (!idx_images.empty()) return open_idx_directory(spec, path, split, idx_images, p);
  if (!split.empty()) fail(spec + ": no IDX images files (*-images-idx3-ubyte[.gz]) in " + path);
  if (has_subdirs) return open_image_folder(path, p);
  fail(spec + ": directory holds no dataset (expected data.mdb, IDX files or class sub-folders of JPEGs)");
}

}  // namespace joule::data
