#include "joule/cli/util.h"

#include <fmt/core.h>

#include <filesystem>

#include "joule/onnx/model_io.h"

namespace joule::cli {

std::string human_count(double v) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}{}", v, units[u]);
}

std::string human_bytes(double v) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

std::string resolve_model_path(const std::string& path) {
  if (path == "default" || path == "fashion_cnn") {
    for (const char* dir : {JOULE_MODELS_DIR, "models"}) {
      auto p = std::filesystem::path(dir) / "fashion_cnn.onnx";
      if (std::filesystem::exists(p)) return p.string();
    }
  }
  return path;
}

ir::Graph load_model_or_default(const std::string& path) { return onnx::load_model(resolve_model_path(path)); }

std::string safe_filename(const std::string& s) {
  std::string r = s;
  for (char& c : r)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  if (r.empty() || r == "." || r == "..") r = "_" + r;
  return r;
}

}  // namespace joule::cli
