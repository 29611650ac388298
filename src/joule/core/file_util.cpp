#include "joule/core/file_util.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "joule/core/error.h"

namespace joule {

namespace fs = std::filesystem;

std::ifstream open_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(path + ": no such file");
  if (fs::is_directory(path, ec)) fail(path + ": is a directory, expected a file");
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path + ": cannot open for reading");
  return f;
}

std::string read_file(const std::string& path) {
  std::ifstream f = open_file(path);
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  f.seekg(0);
  if (size < 0) {  // not seekable (a pipe): read it as a stream
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  std::string bytes(static_cast<size_t>(size), '\0');  // one copy of the file, not two
  f.read(bytes.data(), size);
  if (f.gcount() != size) fail(path + ": read " + std::to_string(f.gcount()) + " of " + std::to_string(size) + " bytes");
  return bytes;
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) fail(path + ": cannot open for writing");
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) {
      fs::remove(tmp);
      fail(path + ": write failed");
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp);
    fail(path + ": cannot write: " + ec.message());
  }
}

uint64_t fnv1a64(const void* data, size_t n, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::string file_checksum(const std::string& path) {
  std::ifstream f = open_file(path);
  std::string block(1 << 20, '\0');
  uint64_t h = 1469598103934665603ull;
  while (f) {
    f.read(block.data(), static_cast<std::streamsize>(block.size()));
    h = fnv1a64(block.data(), static_cast<size_t>(f.gcount()), h);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::string("fnv1a64:") + hex;
}

}  // namespace joule
