// IDX files (Yann LeCun's MNIST format): a big-endian header (magic 0x00000803 = uint8 with 3 dims
// for images, 0x00000801 = uint8 with 1 dim for labels, then one uint32 per dim) and raw bytes.
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>

#include "joule/core/file_util.h"
#include "joule/data/readers.h"

namespace joule::data {

namespace {

namespace fs = std::filesystem;

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;

// Whole gzip stream inflated in memory (multi-member files are concatenated, as gunzip does).
std::string gunzip(const std::string& in, const std::string& path) {
  std::string out;
  if (in.size() >= 4) {  // ISIZE trailer: the uncompressed size mod 2^32, a good reservation hint,
    // believed only as far as deflate can expand (at most ~1032:1): a forged trailer reserves no more.
    const auto* t = reinterpret_cast<const unsigned char*>(in.data() + in.size() - 4);
    const size_t isize = static_cast<size_t>(t[0]) | t[1] << 8 | t[2] << 16 | static_cast<size_t>(t[3]) << 24;
    out.reserve(std::min(isize, in.size() * 1032));
  }
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) fail(path + ": cannot initialise zlib");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  size_t in_left = in.size();
  char buf[1 << 16];
  int rc = Z_OK;
  while (true) {
    if (zs.avail_in == 0 && in_left > 0) {
      zs.avail_in = static_cast<uInt>(std::min<size_t>(in_left, UINT_MAX));
      in_left -= zs.avail_in;
    }
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof buf - zs.avail_out);
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0 && in_left == 0) break;
      inflateReset(&zs);  // another gzip member follows
      continue;
    }
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_left == 0) break;  // input ended mid-stream
    if (rc != Z_OK) break;
  }
  const std::string msg = zs.msg ? zs.msg : "";
  inflateEnd(&zs);
  if (rc == Z_STREAM_END) return out;
  if (rc == Z_BUF_ERROR) fail(path + ": truncated gzip data");
  fail(path + ": corrupt gzip data" + (msg.empty() ? "" : " (" + msg + ")"));
}

std::string load_maybe_gz(const std::string& path) {
  std::string bytes = read_file(path);
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() >= 2 && b[0] == 0x1f && b[1] == 0x8b) return gunzip(bytes, path);
  return bytes;
}

uint32_t be32(const std::string& b, size_t off) {
  const auto* p = reinterpret_cast<const unsigned char*>(b.data() + off);
  return static_cast<uint32_t>(p[0]) << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

// Validates the header of an IDX file with `ndim` dims; returns the dims. The data starts at 4+4*ndim.
std::vector<int64_t> parse_idx_header(const std::string& b, uint32_t magic, size_t ndim,
                                      const std::string& path, const char* kind) {
  if (b.size() < 4) fail(path + ": truncated IDX file (" + std::to_string(b.size()) + " bytes)");
  const uint32_t got = be32(b, 0);
  if (got != magic) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", got);
    fail(path + ": not an IDX " + kind + " file (magic " + hex + ", expected " +
         (magic == kImagesMagic ? "0x00000803" : "0x00000801") + ")");
  }
  const size_t header = 4 + 4 * ndim;
  if (b.size() < header) fail(path + ": truncated IDX header");
  std::vector<int64_t> dims;
  int64_t total = 1;
  for (size_t i = 0; i < ndim; ++i) {
    dims.push_back(be32(b, 4 + 4 * i));
    // Each dim < 2^32; the product stays below 2^40 (checked before it could overflow), and then
    // against the file's size below.
    if (dims.back() == 0 || dims.back() > (int64_t{1} << 40) / total) fail(path + ": implausible IDX dimensions");
    total *= dims.back();
  }
  if (static_cast<int64_t>(b.size() - header) < total)
    fail(path + ": truncated IDX file (" + std::to_string(b.size() - header) + " data bytes, header says " +
         std::to_string(total) + ")");
  return dims;
}

// The labels file next to IMAGES: "images-idx3" -> "labels-idx1" (also the "images.idx3" spelling some
// mirrors use), with or without ".gz". Empty when there is none.
std::string find_labels_file(const std::string& images) {
  const fs::path p(images);
  std::string name = p.filename().string();
  for (const char* from : {"images-idx3", "images.idx3"}) {
    auto pos = name.find(from);
    if (pos == std::string::npos) continue;
    std::string to = from[6] == '-' ? "labels-idx1" : "labels.idx1";
    std::string base = name.replace(pos, 11, to);
    std::string alt = has_extension(base, {".gz"}) ? base.substr(0, base.size() - 3) : base + ".gz";
    std::error_code ec;
    for (const auto& cand : {base, alt})
      if (fs::is_regular_file(p.parent_path() / cand, ec)) return (p.parent_path() / cand).string();
    return "";
  }
  return "";
}

class IdxDataset : public Dataset {
 public:
  IdxDataset(const std::string& path, const Preprocess& p) : path_(path), pre_(p) {
    images_ = load_maybe_gz(path);
    auto dims = parse_idx_header(images_, kImagesMagic, 3, path, "images");
    n_ = dims[0], h_ = dims[1], w_ = dims[2];
    if (pre_.sample_shape.empty()) pre_.sample_shape = {1, h_, w_};
    // The model may take [1,H,W], [H,W] or a flat [H*W] (an MLP); anything else is a different image size.
    const Shape& s = pre_.sample_shape;
    const bool ok = (s.size() == 3 && s[0] == 1 && s[1] == h_ && s[2] == w_) ||
                    (s.size() == 2 && s[0] == h_ && s[1] == w_) || (s.size() == 1 && s[0] == h_ * w_);
    if (!ok)
      fail(path + ": images are " + std::to_string(h_) + "x" + std::to_string(w_) +
           " (1 channel) but the model wants samples of shape " + shape_str(s));
    check_normalisation(pre_, 1, path);

    labels_path_ = find_labels_file(path);
    if (!labels_path_.empty()) {
      labels_ = load_maybe_gz(labels_path_);
      auto ldims = parse_idx_header(labels_, kLabelsMagic, 1, labels_path_, "labels");
      if (ldims[0] != n_)
        fail(labels_path_ + ": " + std::to_string(ldims[0]) + " labels but " + path + " has " +
             std::to_string(n_) + " images");
      labels_.erase(0, 8);
      labels_.resize(static_cast<size_t>(n_));
      for (char c : labels_) classes_ = std::max<int64_t>(classes_, static_cast<unsigned char>(c) + 1);
    }
    images_.erase(0, 16);  // keep only pixels: sample i starts at i*H*W
  }

  size_t size() const override { return static_cast<size_t>(n_); }
  bool has_labels() const override { return !labels_path_.empty(); }

  Sample get(size_t i) const override {
    check_index(i, size(), path_);
    Sample s;
    s.input = Tensor(DType::Float32, pre_.sample_shape);
    const auto* px = reinterpret_cast<const uint8_t*>(images_.data()) + i * static_cast<size_t>(h_ * w_);
    pixels_to_float(px, s.input.data<float>(), 1, h_ * w_, pre_);
    if (has_labels()) s.label = static_cast<unsigned char>(labels_[i]);
    return s;
  }

  std::string describe() const override {
    std::string d = "IDX " + path_ + ": " + std::to_string(n_) + " samples " + std::to_string(h_) + "x" +
                    std::to_string(w_) + ", ";
    return d + (has_labels() ? "labels " + std::to_string(classes_) + " classes" : "no labels");
  }

 private:
  std::string path_, labels_path_;
  Preprocess pre_;
  std::string images_, labels_;  // whole files: Fashion-MNIST's test set is 7.8 MB
  int64_t n_ = 0, h_ = 0, w_ = 0, classes_ = 0;
};

}  // namespace

std::unique_ptr<Dataset> open_idx(const std::string& images_path, const Preprocess& p) {
  return std::make_unique<IdxDataset>(images_path, p);
}

}  // namespace joule::data
