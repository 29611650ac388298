#pragma once
// The `auto` policy's memory: for each key (op, shapes, attributes, dtype, threads, CPU
// model, joule version) the algorithm that measured fastest and the times measured. A JSON
// file, read once and written atomically; a corrupt or foreign file is reported and ignored.
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace joule::kernels {

struct TuningEntry {
  std::string algorithm;
  std::map<std::string, double> ms;  // per algorithm measured
};

class TuningCache {
 public:
  // Default path: $JOULE_TUNING_CACHE, else ~/.cache/joule/tuning.json.
  static std::string default_path();

  explicit TuningCache(std::string path);
  const std::string& path() const { return path_; }
  // Why the file's contents were ignored ("" when read fine or absent).
  const std::string& load_problem() const { return problem_; }

  const TuningEntry* find(const std::string& key) const;
  void put(const std::string& key, TuningEntry e);
  size_t size() const { return entries_.size(); }
  // Writes the file if anything was added (creating its directory).
  void save() const;

 private:
  std::string path_, problem_;
  std::map<std::string, TuningEntry> entries_;
  bool dirty_ = false;
};

}  // namespace joule::kernels
