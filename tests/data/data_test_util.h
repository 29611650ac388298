#pragma once
// Fixture helpers for the data-layer tests: a temporary directory and synthetic files.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <turbojpeg.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace joule::data::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "joule-data-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string operator/(const std::string& rel) const { return (path_ / rel).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

// A quality-100 JPEG of `px` (HWC, channels 1, 3 or 4 = CMYK); 4:4:4 so solid colours stay exact-ish.
inline std::string encode_jpeg(const std::vector<uint8_t>& px, int w, int h, int channels) {
  tjhandle tj = tjInitCompress();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const int pf = channels == 1 ? TJPF_GRAY : channels == 3 ? TJPF_RGB : TJPF_CMYK;
  const int samp = channels == 1 ? TJSAMP_GRAY : TJSAMP_444;
  const int rc = tjCompress2(tj, px.data(), w, 0, h, pf, &buf, &size, samp, 100, 0);
  std::string out = rc == 0 ? std::string(reinterpret_cast<char*>(buf), size) : std::string();
  tjFree(buf);
  tjDestroy(tj);
  EXPECT_EQ(rc, 0) << "tjCompress2 failed";
  return out;
}

inline std::vector<uint8_t> solid(int w, int h, std::vector<uint8_t> colour) {
  std::vector<uint8_t> px;
  for (int i = 0; i < w * h; ++i) px.insert(px.end(), colour.begin(), colour.end());
  return px;
}

}  // namespace joule::data::testing
