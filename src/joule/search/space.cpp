// yaml-cpp 0.7 trips GCC 12's -Wdangling-pointer inside its own headers (node assignment).
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#include "joule/search/space.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/core/yaml_error.h"

namespace joule::search {

const char* const kW8A8 = R"(default:
  weight: {format: int, bits: 8, symmetric: true, granularity: per_channel, calibrator: minmax}
  input:  {format: int, bits: 8, symmetric: false, granularity: per_tensor, calibrator: percentile, percentile: 99.99}
rules:
  - match: {type: Gemm}
    input: {format: int, bits: 8, calibrator: entropy}
)";

namespace {

constexpr const char* kDigits = "0123456789abcdefghijklmnopqrstuvwxyz";

std::string dump(const YAML::Node& n) {
  YAML::Emitter e;
  e << n;
  return std::string(e.c_str()) + "\n";
}

double number(const YAML::Node& v, const std::string& where) {
  try {
    return v.as<double>();
  } catch (const YAML::Exception&) {
    fail(where + ": expected a number");
  }
}

}  // namespace

nlohmann::json Constraints::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  if (accuracy_drop) j["accuracy_drop"] = *accuracy_drop;
  if (min_accuracy) j["min_accuracy"] = *min_accuracy;
  if (latency_ms) j["latency_ms"] = *latency_ms;
  if (energy_mj) j["energy_mj"] = *energy_mj;
  if (size_mb) j["size_mb"] = *size_mb;
  return j;
}

namespace {
// A training block (finetune, qat): steps, batch, lr, optimizer (and qat's method).
void read_training(const YAML::Node& v, const std::string& where, SearchSpace::Training& t, std::string* method) {
  const std::string keys = method ? "steps, batch, lr, optimizer, method" : "steps, batch, lr, optimizer";
  if (!v.IsMap()) fail(where + ": a map (" + keys + ")");
  for (auto f = v.begin(); f != v.end(); ++f) {
    const std::string fk = f->first.as<std::string>();
    const std::string fw = where + "." + fk;
    if (fk == "steps" || fk == "batch") {
      const double x = number(f->second, fw);
      if (!(x >= (fk == "steps" ? 0 : 1)) || x != std::floor(x)) fail(fw + ": a whole number" + (fk == "batch" ? " >= 1" : " >= 0"));
      (fk == "steps" ? t.steps : t.batch) = static_cast<int64_t>(x);
    } else if (fk == "lr") {
      t.lr = number(f->second, fw);
      if (!(t.lr > 0)) fail(fw + ": must be positive");
    } else if (fk == "optimizer") {
      t.optimizer = f->second.as<std::string>();
      if (t.optimizer != "sgd" && t.optimizer != "adam" && t.optimizer != "adamw")
        fail(fw + ": '" + t.optimizer + "': expected sgd, adam or adamw");
    } else if (fk == "method" && method) {
      *method = f->second.as<std::string>();
      if (*method != "ste" && *method != "lsq" && *method != "pact" && *method != "tqt")
        fail(fw + ": '" + *method + "': expected ste, lsq, pact or tqt");
    } else {
      fail(where + ": unknown key '" + fk + "' (" + keys + ")");
    }
  }
}
}  // namespace

SearchSpace SearchSpace::parse(const std::string& text, const std::string& source) {
  return read_yaml(source, [&] {
    SearchSpace s;
    s.source = source;
    s.text = text;
    const YAML::Node root = load_yaml(text, source);
    if (!root.IsMap()) fail(source + ": a search space is a map (precision, prune, formats, constraints, ...)");
    bool precision_given = false;
    for (auto it = root.begin(); it != root.end(); ++it) {
      const std::string k = it->first.as<std::string>();
      const YAML::Node v = it->second;  // (a handle: `it->` is a temporary)
      const std::string where = fmt::format("{}: line {}: {}", source, it->first.Mark().line + 1, k);
      try {
        if (k == "quant") {
          if (v.IsMap()) {
            s.quant = dump(v);
          } else {
            const std::string q = v.as<std::string>();
            s.quant = q.find('\n') != std::string::npos ? q : read_file(q);
          }
        } else if (k == "precision") {
          if (!v.IsSequence() || v.size() == 0) fail(where + ": a non-empty list (fp32, bf16, int8, or a format's name)");
          s.precision = v.as<std::vector<std::string>>();
          precision_given = true;
        } else if (k == "formats") {
          if (!v.IsMap()) fail(where + ": a map of name -> roles (weight, input, bias, output)");
          for (auto f = v.begin(); f != v.end(); ++f) {
            const std::string name = f->first.as<std::string>();
            if (name == "fp32" || name == "bf16" || name == "int8") fail(where + ": '" + name + "' is built in");
            if (!f->second.IsMap()) fail(where + "." + name + ": a map of roles (weight, input, bias, output)");
            for (auto r = f->second.begin(); r != f->second.end(); ++r) {
              const std::string role = r->first.as<std::string>();
              if (role != "weight" && role != "input" && role != "bias" && role != "output")
                fail(where + "." + name + ": unknown role '" + role + "' (weight, input, bias, output)");
            }
            s.formats[name] = dump(f->second);
          }
        } else if (k == "layers") {
          s.layers.read(v, where);
        } else if (k == "prune") {
          if (!v.IsSequence()) fail(where + ": a list of ratios in [0, 1)");
          for (const auto& r : v) {
            const double x = number(r, where);
            if (!(x >= 0 && x < 1)) fail(fmt::format("{}: ratio {} must be in [0, 1)", where, x));
            s.prune.push_back(x);
          }
          std::set<double> seen(s.prune.begin(), s.prune.end());
          if (seen.size() != s.prune.size()) fail(where + ": a ratio is listed twice");
        } else if (k == "prune_layers") {
          s.prune_layers.read(v, where);
        } else if (k == "criterion") {
          s.criterion = v.as<std::string>();
          if (s.criterion != "l1" && s.criterion != "l2" && s.criterion != "bn" && s.criterion != "random")
            fail(where + ": '" + s.criterion + "': expected l1, l2, bn or random");
        } else if (k == "finetune") {
          read_training(v, where, s.finetune, nullptr);
        } else if (k == "qat") {
          read_training(v, where, s.qat, &s.qat_method);
          if (s.qat.steps == 0) fail(where + ".steps: give the steps each QAT trial trains (>= 1)");
        } else if (k == "constraints") {
          if (!v.IsMap()) fail(where + ": a map (accuracy_drop, min_accuracy, latency_ms, energy_mj, size_mb)");
          for (auto c = v.begin(); c != v.end(); ++c) {
            const std::string ck = c->first.as<std::string>();
            const double x = number(c->second, where + "." + ck);
            if (ck == "accuracy_drop") s.constraints.accuracy_drop = x;
            else if (ck == "min_accuracy") s.constraints.min_accuracy = x;
            else if (ck == "latency_ms") s.constraints.latency_ms = x;
            else if (ck == "energy_mj") s.constraints.energy_mj = x;
            else if (ck == "size_mb") s.constraints.size_mb = x;
            else fail(where + ": unknown constraint '" + ck + "' (accuracy_drop, min_accuracy, latency_ms, energy_mj, size_mb)");
          }
        } else {
          fail(where + ": unknown key (quant, precision, formats, layers, prune, prune_layers, criterion, finetune, qat, "
                       "constraints)");
        }
      } catch (const YAML::Exception&) {
        fail(where + ": bad value");
      }
    }
    std::set<std::string> seen;
    for (const auto& p : s.precision) {
      if (p != "fp32" && p != "bf16" && p != "int8" && !s.formats.count(p))
        fail(fmt::format("{}: precision '{}': not fp32, bf16, int8 or a name under formats ({})", source, p,
                         s.formats.empty() ? "none defined" : fmt::format("{}", fmt::join([&] {
                           std::vector<std::string> n;
                           for (const auto& [k, _] : s.formats) n.push_back(k);
                           return n;
                         }(), ", "))));
      if (!seen.insert(p).second) fail(source + ": precision '" + p + "' is listed twice");
    }
    if (s.precision.size() > 36 || s.prune.size() > 36) fail(source + ": at most 36 choices per variable");
    if (!precision_given && s.prune.empty()) fail(source + ": the space has no choices (give precision and/or prune)");
    if (s.quant.empty()) s.quant = kW8A8;
    return s;
  });
}

SearchSpace SearchSpace::load(const std::string& path) {
  if (!path.empty() && (path[0] == '{' || path.find('\n') != std::string::npos)) return parse(path, "inline space");
  return parse(read_file(path), path);
}

int format_bits(const quant::Format& f) {
  switch (f.kind) {
    case quant::FormatKind::None: return 32;
    case quant::FormatKind::Int:
    case quant::FormatKind::Fixed:
    case quant::FormatKind::BlockFloat: return f.bits;
    case quant::FormatKind::Float16:
    case quant::FormatKind::BFloat16: return 16;
    case quant::FormatKind::MiniFloat: return 1 + f.exp_bits + f.man_bits;
  }
  return 32;
}

bool Candidate::pruned() const {
  for (const auto& [_, r] : prune.node_ratio)
    if (r > 0) return true;
  return false;
}

std::vector<std::string> Candidate::algo_rules() const {
  std::vector<std::string> r;
  for (const auto& n : bf16_nodes) r.push_back(n + "=onednn_bf16");
  return r;
}

std::string Candidate::prune_yaml() const {
  YAML::Node root;
  root["default"]["ratio"] = 0;
  root["default"]["structured"] = true;
  root["default"]["criterion"] = prune.criterion;
  for (const auto& [node, r] : prune.node_ratio) {
    if (r <= 0) continue;
    YAML::Node rule;
    rule["match"]["name"] = node;
    rule["ratio"] = r;
    root["rules"].push_back(rule);
  }
  return dump(root);
}

std::string Candidate::algo_yaml() const {
  if (bf16_nodes.empty()) return "";
  YAML::Node root;
  for (const auto& n : bf16_nodes) root[n] = "onednn_bf16";
  return dump(root);
}

Decisions::Decisions(const SearchSpace& space, const ir::Graph& original, const ir::Graph& prepared,
                     const std::vector<quant::NodeChoice>& choices)
    : space_(space) {
  base_yaml_ = space.quant;
  // Precision variables: the layers the base config quantizes (that `layers` matches).
  const bool fixed = space.precision.size() == 1 && space.precision.front() == "int8";
  for (const auto& c : choices) {
    const ir::Node& n = *prepared.nodes[c.node];
    const auto& w = c.roles[static_cast<int>(quant::Role::Weight)];
    bits_[n.name] = {{"int8", w ? format_bits(w->format) : 32}, {"fp32", 32}, {"bf16", 16}};
    if (fixed || (!space.layers.empty() && !space.layers.matches(n, &prepared))) {
      ++fixed_quantized_;
      continue;
    }
    vars_.push_back({Variable::Precision, n.name, n.op_type, {n.name}, 0, space.precision.size()});
  }
  if (!fixed && vars_.empty())
    fail(space.source + ": no layer of the model is both quantized by the base config and matched by 'layers'");
  // The weight bits of every extra format on each layer: the format as a rule over them all.
  for (const auto& [name, roles] : space.formats) {
    if (std::find(space.precision.begin(), space.precision.end(), name) == space.precision.end()) continue;
    YAML::Node root = YAML::Load(base_yaml_);
    for (const auto& v : vars_) {
      YAML::Node rule = YAML::Load(roles);
      rule["match"]["name"] = v.name;
      root["rules"].push_back(rule);
    }
    const auto resolved = quant::resolve(prepared, quant::QuantConfig::parse(dump(root), space.source + ": format " + name));
    for (const auto& c : resolved) {
      const auto& w = c.roles[static_cast<int>(quant::Role::Weight)];
      bits_[prepared.nodes[c.node]->name][name] = w ? format_bits(w->format) : 32;
    }
  }
  // Pruning variables: one per channel group.
  if (!space.prune.empty()) {
    bool any = false;
    for (auto& g : prune::channel_groups(original)) {
      const ir::Node* first = nullptr;
      for (const auto& n : original.nodes)
        if (n->name == g.producers.front()) first = n.get();
      if (!space.prune_layers.empty() && (!first || !space.prune_layers.matches(*first, &original))) continue;
      vars_.push_back({Variable::Prune, g.producers.front(), first ? first->op_type : "Conv", g.producers, g.channels,
                       space.prune.size()});
      any = true;
    }
    if (!any && !space.prune_layers.empty())
      fail(space.source + ": 'prune_layers' (" + space.prune_layers.describe() + ") matches no channel group's first layer");
  }
  if (space.qat.steps > 0) vars_.push_back({Variable::Qat, "qat", "", {}, 0, 2});
  if (vars_.empty()) fail(space.source + ": the space has no variable on this model (no quantizable or prunable layer)");
}

std::string Decisions::label(size_t v, size_t c) const {
  const Variable& var = vars_.at(v);
  if (var.kind == Variable::Precision) return space_.precision.at(c);
  if (var.kind == Variable::Qat) return c ? "on" : "off";
  return fmt::format("{:g}", space_.prune.at(c));
}

Candidate Decisions::candidate(const std::vector<int>& x) const {
  if (x.size() != vars_.size()) fail(fmt::format("search: a genome of {} values for {} variables", x.size(), vars_.size()));
  Candidate c;
  c.prune.structured = true;
  c.prune.criterion = space_.criterion;
  c.prune.ratio = 0;
  YAML::Node root = YAML::Load(base_yaml_);
  bool any_quantized = false;
  for (size_t i = 0; i < vars_.size(); ++i) {
    const Variable& v = vars_[i];
    if (x[i] < 0 || static_cast<size_t>(x[i]) >= v.choices)
      fail(fmt::format("search: variable {} ({}) has no choice {}", i, v.name, x[i]));
    const std::string l = label(i, static_cast<size_t>(x[i]));
    if (v.kind == Variable::Qat) {
      c.qat = x[i] == 1;
      continue;
    }
    if (v.kind == Variable::Prune) {
      for (const auto& n : v.nodes) c.prune.node_ratio[n] = space_.prune[static_cast<size_t>(x[i])];
      continue;
    }
    c.precision[v.name] = l;
    if (l == "int8") {
      any_quantized = true;
      continue;
    }
    YAML::Node rule;
    if (l == "fp32" || l == "bf16") {
      rule["skip"] = true;
      if (l == "bf16") c.bf16_nodes.push_back(v.name);
    } else {
      rule = YAML::Load(space_.formats.at(l));
      any_quantized = true;
    }
    rule["match"]["name"] = v.name;
    root["rules"].push_back(rule);
  }
  // Layers without a variable keep the base config's choice.
  if (any_quantized || fixed_quantized_ > 0) c.quant_yaml = dump(root);
  c.qat = c.qat && c.quantized();
  return c;
}

std::optional<std::vector<int>> Decisions::uniform(const std::string& precision) const {
  std::vector<int> x(vars_.size(), 0);
  const auto p = std::find(space_.precision.begin(), space_.precision.end(), precision);
  const auto z = std::find(space_.prune.begin(), space_.prune.end(), 0.0);
  for (size_t i = 0; i < vars_.size(); ++i) {
    if (vars_[i].kind == Variable::Qat) {
      x[i] = 0;
    } else if (vars_[i].kind == Variable::Precision) {
      if (p == space_.precision.end()) return std::nullopt;
      x[i] = static_cast<int>(p - space_.precision.begin());
    } else {
      if (z == space_.prune.end()) return std::nullopt;
      x[i] = static_cast<int>(z - space_.prune.begin());
    }
  }
  return x;
}

std::string Decisions::key(const std::vector<int>& x) const {
  std::string k;
  for (size_t i = 0; i < x.size() && i < vars_.size(); ++i) {
    if (i > 0 && vars_[i].kind != vars_[i - 1].kind) k += '|';
    int d = x[i];
    if (vars_[i].kind == Variable::Qat && d == 1 && !candidate(x).qat) d = 0;  // nothing quantized to train
    k += kDigits[d];
  }
  return k;
}

int Decisions::weight_bits(const std::string& node, const std::string& label) const {
  auto it = bits_.find(node);
  if (it == bits_.end()) return 32;
  auto jt = it->second.find(label);
  return jt == it->second.end() ? 32 : jt->second;
}

nlohmann::json Decisions::to_json() const {
  nlohmann::json j = nlohmann::json::array();
  for (size_t i = 0; i < vars_.size(); ++i) {
    const Variable& v = vars_[i];
    nlohmann::json c = nlohmann::json::array();
    for (size_t k = 0; k < v.choices; ++k) c.push_back(label(i, k));
    j.push_back({{"kind", v.kind == Variable::Precision ? "precision" : v.kind == Variable::Prune ? "prune" : "qat"},
                 {"name", v.name},
                 {"nodes", v.nodes},
                 {"choices", c}});
    if (v.kind == Variable::Prune) j.back()["channels"] = v.channels;
  }
  return j;
}

}  // namespace joule::search
