#include "joule/kernels/tuning_cache.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "joule/core/error.h"
#include "joule/core/file_util.h"

namespace joule::kernels {

namespace {
constexpr int kSchema = 1;
}

std::string TuningCache::default_path() {
  if (const char* p = std::getenv("JOULE_TUNING_CACHE"); p && *p) return p;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/joule/tuning.json";
}

TuningCache::TuningCache(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return;
  try {
    const nlohmann::json j = nlohmann::json::parse(read_file(path_));
    if (!j.is_object() || j.value("schema", 0) != kSchema || !j.contains("entries") || !j["entries"].is_object())
      throw std::runtime_error("not a joule tuning cache (schema " + std::to_string(kSchema) + ")");
    for (auto& [key, e] : j["entries"].items()) {
      TuningEntry t;
      t.algorithm = e.at("algorithm").get<std::string>();
      for (auto& [name, ms] : e.at("ms").items()) t.ms[name] = ms.get<double>();
      entries_[key] = std::move(t);
    }
  } catch (const std::exception& ex) {
    entries_.clear();
    problem_ = "tuning cache " + path_ + " ignored: " + ex.what();
  }
}

const TuningEntry* TuningCache::find(const std::string& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

void TuningCache::put(const std::string& key, TuningEntry e) {
  entries_[key] = std::move(e);
  dirty_ = true;
}

void TuningCache::save() const {
  if (!dirty_) return;
  nlohmann::json j = {{"schema", kSchema}, {"entries", nlohmann::json::object()}};
  for (auto& [key, e] : entries_) j["entries"][key] = {{"algorithm", e.algorithm}, {"ms", e.ms}};
  const std::filesystem::path p(path_);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  write_file_atomic(path_, j.dump(1) + "\n");
}

}  // namespace joule::kernels
