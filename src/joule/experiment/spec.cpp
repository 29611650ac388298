#include "joule/experiment/spec.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/core/parse.h"
#include "joule/core/yaml_error.h"

namespace joule::experiment {

namespace fs = std::filesystem;

const std::vector<std::string>& step_kinds() {
  static const std::vector<std::string> kinds = {"prune",   "quantize",    "bench",  "profile",
                                                 "eval",    "compare",     "sensitivity", "predict"};
  return kinds;
}

namespace {

// A scalar's text; BadInput unless it is UTF-8 (YAML is; JSON output of it could not be written).
std::string utf8_scalar(const YAML::Node& n) {
  const std::string s = n.as<std::string>();
  if (!is_utf8(s)) fail("line " + std::to_string(n.Mark().line + 1) + ": text that is not UTF-8");
  return s;
}

// YAML to JSON: plain scalars that read as integers, numbers or booleans become those; quoted
// scalars stay strings.
nlohmann::json to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Sequence: {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& e : n) a.push_back(to_json(e));
      return a;
    }
    case YAML::NodeType::Map: {
      nlohmann::json o = nlohmann::json::object();
      for (const auto& kv : n) o[utf8_scalar(kv.first)] = to_json(kv.second);
      return o;
    }
    case YAML::NodeType::Scalar:
      break;
  }
  const std::string s = utf8_scalar(n);
  if (n.Tag() == "!") return s;  // quoted
  if (s == "true" || s == "True") return true;
  if (s == "false" || s == "False") return false;
  if (s == "null" || s == "~") return nullptr;
  try {
    size_t used = 0;
    long long v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (...) {
  }
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (...) {
  }
  return s;
}

std::string label_of(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Replaces ${NAME} in `s`: an axis label, the model's name, or an environment variable.
std::string interpolate(const std::string& s, const std::map<std::string, nlohmann::json>& values,
                        const std::string& where) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    size_t at = s.find("${", i);
    if (at == std::string::npos) {
      out += s.substr(i);
      break;
    }
    size_t end = s.find('}', at);
    if (end == std::string::npos) fail(where + ": unterminated '${' in \"" + s + "\"");
    out += s.substr(i, at - i);
    std::string name = s.substr(at + 2, end - at - 2), fallback;
    const size_t dash = name.find(":-");
    const bool has_fallback = dash != std::string::npos;
    if (has_fallback) {
      fallback = name.substr(dash + 2);
      name = name.substr(0, dash);
    }
    if (auto it = values.find(name); it != values.end()) {
      out += label_of(it->second);
    } else if (const char* e = std::getenv(name.c_str()); e && *e) {
      out += e;
    } else if (has_fallback) {
      out += fallback;
    } else {
      fail(where + ": '${" + name + "}' is neither a grid axis, 'model', nor a set environment variable");
    }
    i = end + 1;
  }
  return out;
}

nlohmann::json substitute(const nlohmann::json& j, const std::map<std::string, nlohmann::json>& values,
                          const std::string& where) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    // The whole string one placeholder of an axis: its value as it is (a number, a map).
    if (s.size() > 3 && s.rfind("${", 0) == 0 && s.back() == '}' && s.find('}') == s.size() - 1)
      if (auto it = values.find(s.substr(2, s.size() - 3)); it != values.end()) return it->second;
    return interpolate(s, values, where);
  }
  if (j.is_array()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& e : j) a.push_back(substitute(e, values, where));
    return a;
  }
  if (j.is_object()) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [k, v] : j.items()) o[k] = substitute(v, values, where);
    return o;
  }
  return j;
}

// "~/x" -> "$HOME/x".
std::string home(const std::string& s) {
  const char* h = std::getenv("HOME");
  return s.rfind("~/", 0) == 0 && h ? std::string(h) + s.substr(1) : s;
}

std::string slug_of(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '-';
  return out;
}

std::string text_of(const nlohmann::json& j, const std::string& where) {
  if (!j.is_string()) fail(where + ": expected a string, got " + j.dump());
  return j.get<std::string>();
}

}  // namespace

std::string resolve_path(const std::string& v, const std::string& base) {
  if (v.empty() || v == "default" || fs::path(v).is_absolute()) return v;
  const size_t colon = v.rfind(':');
  std::error_code ec;
  if (fs::exists(fs::path(base) / v, ec) || (colon != std::string::npos && fs::exists(fs::path(base) / v.substr(0, colon), ec)))
    return (fs::path(base) / v).lexically_normal().string();
  return v;
}


std::string Point::config_hash() const {
  nlohmann::json j = {{"model", {model.path, model.calib, model.data}}, {"steps", nlohmann::json::array()}};
  for (const Step& s : steps) j["steps"].push_back({s.kind, s.params});
  const std::string text = j.dump();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(text.data(), text.size())));
  return hex;
}

nlohmann::json Point::params() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : labels) j[k] = v;
  return j;
}

ExperimentSpec read_experiment(const std::string& path) {
  return read_yaml(path, [&] {
    ExperimentSpec spec;
    spec.file = fs::absolute(path).lexically_normal().string();
    std::ifstream f(path);
    if (!f) fail(path + ": cannot read the experiment file");
    std::stringstream ss;
    ss << f.rdbuf();
    spec.text = ss.str();
    spec.base_dir = fs::path(spec.file).parent_path().string();
    nlohmann::json j;
    try {
      j = to_json(YAML::Load(spec.text));
    } catch (const YAML::Exception& e) {
      fail(path + ": not valid YAML: " + e.what());
    } catch (const Error& e) {
      fail(path + ": " + e.what());
    }
    if (!j.is_object()) fail(path + ": an experiment file is a map (name, models, grid, steps)");
    const std::set<std::string> known = {"name", "dir", "models", "grid", "steps", "slurm"};
    std::string unknown;
    for (const auto& [k, v] : j.items())
      if (!known.count(k)) unknown += (unknown.empty() ? "" : ", ") + k;
    if (!unknown.empty()) fail(path + ": unknown key(s) " + unknown + " (known: name, dir, models, grid, steps, slurm)");

    if (!j.contains("name")) fail(path + ": 'name' is required");
    spec.name = text_of(j["name"], path + ": name");
    if (spec.name.empty() || slug_of(spec.name) != spec.name)
      fail(path + ": name '" + spec.name + "' must be non-empty letters, digits, '.', '-' or '_'");
    spec.dir = j.contains("dir") ? text_of(j["dir"], path + ": dir") : "runs/" + spec.name;

    if (!j.contains("models") || !j["models"].is_array() || j["models"].empty())
      fail(path + ": 'models' must be a non-empty list");
    std::set<std::string> names;
    for (size_t i = 0; i < j["models"].size(); ++i) {
      const auto& m = j["models"][i];
      const std::string where = path + ": models[" + std::to_string(i) + "]";
      ModelEntry e;
      if (m.is_string()) {
        e.path = m.get<std::string>();
      } else if (m.is_object()) {
        for (const auto& [k, v] : m.items()) {
          if (k == "name") e.name = text_of(v, where + ".name");
          else if (k == "path") e.path = text_of(v, where + ".path");
          else if (k == "calib") e.calib = text_of(v, where + ".calib");
          else if (k == "data") e.data = text_of(v, where + ".data");
          else fail(where + ": unknown key '" + k + "' (known: name, path, calib, data)");
        }
        if (e.path.empty()) fail(where + ": 'path' is required");
      } else {
        fail(where + ": a model is a path or a map {name, path, calib, data}");
      }
      std::map<std::string, nlohmann::json> none;
      for (std::string* f : {&e.path, &e.calib, &e.data}) *f = resolve_path(home(interpolate(*f, none, where)), spec.base_dir);
      if (e.name.empty()) e.name = e.path == "default" ? "default" : fs::path(e.path).stem().string();
      if (e.name == "model") e.name = fs::path(e.path).parent_path().filename().string();  // zoo/NAME/model.onnx
      if (!names.insert(e.name).second) fail(where + ": a second model named '" + e.name + "' (give it a name)");
      spec.models.push_back(e);
    }

    if (j.contains("grid") && !j["grid"].is_null()) {
      if (!j["grid"].is_object()) fail(path + ": 'grid' must be a map of axis -> list (or map of label -> value)");
      // yaml-cpp keeps the file's order; nlohmann's object sorts keys, so read the order again.
      const YAML::Node g = YAML::Load(spec.text)["grid"];
      for (const auto& kv : g) {
        Axis a;
        a.name = kv.first.as<std::string>();
        if (a.name == "model") fail(path + ": grid axis 'model' is reserved (list models under 'models')");
        const nlohmann::json& v = j["grid"][a.name];
        if (v.is_array()) {
          for (const auto& e : v) a.values.emplace_back(label_of(e), e);
        } else if (v.is_object()) {
          for (const auto& lv : kv.second) a.values.emplace_back(lv.first.as<std::string>(), to_json(lv.second));
        } else {
          a.values.emplace_back(label_of(v), v);
        }
        if (a.values.empty()) fail(path + ": grid axis '" + a.name + "' has no values");
        std::set<std::string> labels;
        for (auto& [l, _] : a.values)
          if (!labels.insert(l).second) fail(path + ": grid axis '" + a.name + "' has the label '" + l + "' twice");
        spec.grid.push_back(std::move(a));
      }
    }

    if (!j.contains("steps") || !j["steps"].is_array() || j["steps"].empty())
      fail(path + ": 'steps' must be a non-empty list");
    std::map<std::string, int> seen;
    for (size_t i = 0; i < j["steps"].size(); ++i) {
      const auto& s = j["steps"][i];
      const std::string where = path + ": steps[" + std::to_string(i) + "]";
      Step st;
      if (s.is_string()) {
        st.kind = s.get<std::string>();
      } else if (s.is_object() && s.size() == 1) {
        st.kind = s.begin().key();
        if (!s.begin().value().is_null()) {
          if (!s.begin().value().is_object()) fail(where + ": the parameters of '" + st.kind + "' must be a map");
          st.params = s.begin().value();
        }
      } else {
        fail(where + ": a step is a name or {name: {parameters}}");
      }
      const auto& kinds = step_kinds();
      if (std::find(kinds.begin(), kinds.end(), st.kind) == kinds.end()) {
        std::string all;
        for (auto& k : kinds) all += (all.empty() ? "" : ", ") + k;
        fail(where + ": unknown step '" + st.kind + "' (known: " + all + ")");
      }
      const int n = ++seen[st.kind];
      st.name = n == 1 ? st.kind : st.kind + "_" + std::to_string(n);
      spec.steps.push_back(std::move(st));
    }
    if (j.contains("slurm") && !j["slurm"].is_null()) {
      if (!j["slurm"].is_object()) fail(path + ": 'slurm' must be a map (partition, time, cpus_per_task, mem, retries, options)");
      const std::set<std::string> keys = {"partition", "time", "cpus_per_task", "mem", "retries", "options"};
      for (const auto& [k, v] : j["slurm"].items())
        if (!keys.count(k)) fail(path + ": slurm: unknown key '" + k + "' (known: partition, time, cpus_per_task, mem, retries, options)");
      spec.slurm = j["slurm"];
    }
    // Every placeholder must resolve: expand the first point now, so errors come before any run.
    expand(spec);
    return spec;
  });
}

std::vector<Point> expand(const ExperimentSpec& spec) {
  std::vector<Point> out;
  for (const ModelEntry& m : spec.models) {
    std::vector<size_t> at(spec.grid.size(), 0);
    while (true) {
      Point p;
      p.index = out.size();
      p.model = m;
      p.labels["model"] = m.name;
      std::map<std::string, nlohmann::json> values = {{"model", m.name}};
      p.key = "model=" + m.name;
      p.slug = slug_of(m.name);
      for (size_t a = 0; a < spec.grid.size(); ++a) {
        const auto& [label, value] = spec.grid[a].values[at[a]];
        p.labels[spec.grid[a].name] = label;
        values[spec.grid[a].name] = value;
        p.key += " " + spec.grid[a].name + "=" + label;
        p.slug += "__" + slug_of(spec.grid[a].name) + "-" + slug_of(label);
      }
      for (const Step& s : spec.steps) {
        Step t = s;
        t.params = substitute(s.params, values, spec.file + ": step '" + s.name + "'");
        p.steps.push_back(std::move(t));
      }
      out.push_back(std::move(p));
      size_t a = 0;
      for (; a < at.size(); ++a) {
        if (++at[a] < spec.grid[a].values.size()) break;
        at[a] = 0;
      }
      if (a == at.size()) break;
    }
  }
  return out;
}

}  // namespace joule::experiment
