// ImageFolder layout (torchvision / ImageNet val prepared by class): DIR/<class>/<image>.jpg, the
// label being the index of <class> among the sorted sub-folder names.
#include <algorithm>
#include <filesystem>

#include "joule/core/file_util.h"
#include "joule/data/image.h"
#include "joule/data/readers.h"

namespace joule::data {

namespace fs = std::filesystem;

FolderListing list_class_folders(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail(dir + ": not a directory");
  FolderListing out;
  // Hidden folders (".ipynb_checkpoints", ".git") are not classes. Empty class folders still are, so
  // that labels keep matching the model's class order.
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name[0] != '.' && e.is_directory(ec)) out.classes.push_back(name);
  }
  if (ec) fail(dir + ": cannot list directory: " + ec.message());
  std::sort(out.classes.begin(), out.classes.end());  // byte order, like Python's sorted()
  for (size_t c = 0; c < out.classes.size(); ++c) {
    const fs::path sub = fs::path(dir) / out.classes[c];
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(sub, ec)) {
      const std::string name = e.path().filename().string();
      if (name[0] != '.' && has_extension(name, {".jpg", ".jpeg"}) && e.is_regular_file(ec))
        files.push_back(e.path().string());
    }
    if (ec) fail(sub.string() + ": cannot list directory: " + ec.message());
    std::sort(files.begin(), files.end());
    for (auto& f : files) {
      out.files.push_back(std::move(f));
      out.labels.push_back(static_cast<int64_t>(c));
    }
  }
  if (out.files.empty())
    fail(dir + ": no .jpg/.jpeg files in class sub-folders (" + std::to_string(out.classes.size()) +
         " folders)");
  return out;
}

namespace {

class ImageFolderDataset : public Dataset {
 public:
  ImageFolderDataset(const std::string& dir, const Preprocess& p) : dir_(dir), pre_(p) {
    check_image_preprocess(pre_, dir);
    list_ = list_class_folders(dir);
  }

  size_t size() const override { return list_.files.size(); }
  bool has_labels() const override { return true; }
  std::vector<std::string> class_names() const override { return list_.classes; }

  Sample get(size_t i) const override {
    check_index(i, size(), dir_);
    const std::string& path = list_.files[i];
    Sample s;
    try {
      const std::string bytes = read_file(path);
      s = jpeg_sample(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), pre_, path);
    } catch (const std::exception& e) {  // unreadable file: read_file's message already names the path
      s = Sample{};
      s.error = e.what();
    }
    s.label = list_.labels[i];
    return s;
  }

  std::string describe() const override {
    return "JPEG folders " + dir_ + ": " + std::to_string(size()) + " images in " +
           std::to_string(list_.classes.size()) + " classes, resize " + std::to_string(resize_target(pre_)) +
           " crop " + std::to_string(pre_.sample_shape[1]) + "x" + std::to_string(pre_.sample_shape[2]) +
           (pre_.sample_shape[0] == 1 ? " gray" : " RGB");
  }

 private:
  std::string dir_;
  Preprocess pre_;
  FolderListing list_;
};

}  // namespace

std::unique_ptr<Dataset> open_image_folder(const std::string& dir, const Preprocess& p) {
  return std::make_unique<ImageFolderDataset>(dir, p);
}

}  // namespace joule::data
