#include "joule/quant/config.h"

// yaml-cpp's node iterators trip GCC 12 false positives in code that uses them.
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/core/yaml_error.h"

namespace joule::quant {

const char* role_name(Role r) {
  switch (r) {
    case Role::Input: return "input";
    case Role::Weight: return "weight";
    case Role::Bias: return "bias";
    case Role::Output: return "output";
  }
  return "?";
}

namespace {

std::string at_line(const std::string& source, int line) { return source + ":" + std::to_string(line); }

int to_int(const std::string& v, const std::string& where) {
  try {
    size_t used = 0;
    const int i = std::stoi(v, &used);
    if (used == v.size()) return i;
  } catch (const std::exception&) {
  }
  fail(where + ": expected an integer, got '" + v + "'");
}

double to_double(const std::string& v, const std::string& where) {
  try {
    size_t used = 0;
    const double d = std::stod(v, &used);
    if (used == v.size()) return d;
  } catch (const std::exception&) {
  }
  fail(where + ": expected a number, got '" + v + "'");
}

bool to_bool(const std::string& v, const std::string& where) {
  if (v == "true" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "no" || v == "off") return false;
  fail(where + ": expected true or false, got '" + v + "'");
}

// format: names a kind, or a preset that sets several fields at once.
void set_format(TensorSpec& s, const std::string& v, const std::string& where) {
  Format& f = s.format;
  if (v == "none" || v == "fp32" || v == "float32") {
    f.kind = FormatKind::None;
  } else if (v == "int" || v == "uint") {
    f.kind = FormatKind::Int;
    if (v == "uint") f.is_signed = false;
  } else if (v.size() > 3 && (v.rfind("int", 0) == 0 || v.rfind("uint", 0) == 0) &&
             std::all_of(v.begin() + (v[0] == 'u' ? 4 : 3), v.end(), ::isdigit)) {
    f.kind = FormatKind::Int;  // int8, uint4, ...
    f.is_signed = v[0] != 'u';
    f.symmetric = f.is_signed;
    f.bits = to_int(v.substr(v[0] == 'u' ? 4 : 3), where);
  } else if (v == "fixed") {
    f.kind = FormatKind::Fixed;
  } else if (v == "fp16" || v == "float16") {
    f.kind = FormatKind::Float16;
  } else if (v == "bf16" || v == "bfloat16") {
    f.kind = FormatKind::BFloat16;
  } else if (v == "fp8_e4m3" || v == "fp8_e5m2" || v == "fp6_e3m2" || v == "fp6_e2m3" || v == "fp4_e2m1") {
    const Format p = minifloat_preset(v);
    const bool scaled = f.scaled;
    f = p;
    f.scaled = scaled;
  } else if (v == "minifloat") {
    f.kind = FormatKind::MiniFloat;
  } else if (v == "bfp" || v == "block_float") {
    f.kind = FormatKind::BlockFloat;
  } else {
    fail(where + ": unknown format '" + v +
         "' (int, uint, intN, fixed, fp16, bf16, fp8_e4m3, fp8_e5m2, fp6_e3m2, fp6_e2m3, fp4_e2m1, minifloat, bfp, "
         "none)");
  }
}

void apply_field(TensorSpec& s, const std::string& k, const std::string& v, const std::string& where0) {
  const std::string where = where0 + ": " + k;
  Format& f = s.format;
  if (k == "format") {
    set_format(s, v, where);
  } else if (k == "bits") {
    f.bits = to_int(v, where);
  } else if (k == "symmetric") {
    f.symmetric = to_bool(v, where);
    f.is_signed = f.symmetric;  // the usual pairing; `signed` after this overrides
  } else if (k == "signed") {
    f.is_signed = to_bool(v, where);
  } else if (k == "narrow_range") {
    f.narrow_range = to_bool(v, where);
  } else if (k == "granularity") {
    if (v == "per_tensor") f.granularity = Granularity::PerTensor;
    else if (v == "per_channel") f.granularity = Granularity::PerChannel;
    else fail(where + ": expected per_tensor or per_channel, got '" + v + "'");
  } else if (k == "axis") {
    f.axis = to_int(v, where);
    s.axis_set = true;
  } else if (k == "width") {
    f.bits = to_int(v, where);
  } else if (k == "frac_width" || k == "frac_bits") {
    f.frac_bits = to_int(v, where);
  } else if (k == "exp_bits") {
    f.exp_bits = to_int(v, where);
  } else if (k == "man_bits") {
    f.man_bits = to_int(v, where);
  } else if (k == "bias") {
    f.bias = to_int(v, where);
  } else if (k == "has_nan") {
    f.has_nan = to_bool(v, where);
  } else if (k == "finite_only") {
    f.finite_only = to_bool(v, where);
  } else if (k == "denormals") {
    f.denormals = to_bool(v, where);
  } else if (k == "saturate") {
    f.saturate = to_bool(v, where);
  } else if (k == "scaled") {
    f.scaled = to_bool(v, where);
  } else if (k == "block") {
    f.block = to_int(v, where);
  } else if (k == "calibrator") {
    s.calib.method = calib_method_from_name(v);
  } else if (k == "percentile") {
    s.calib.percentile = to_double(v, where);
    if (!(s.calib.percentile > 0 && s.calib.percentile <= 100)) fail(where + ": must be in (0, 100]");
  } else if (k == "momentum") {
    s.calib.momentum = to_double(v, where);
    if (!(s.calib.momentum > 0 && s.calib.momentum <= 1)) fail(where + ": must be in (0, 1]");
  } else if (k == "bins") {
    s.calib.bins = to_int(v, where);
    if (s.calib.bins < 16 || s.calib.bins > (1 << 20)) fail(where + ": must be in [16, 1048576]");
  } else {
    fail(where0 + ": unknown key '" + k +
         "' (format, bits, symmetric, signed, narrow_range, granularity, axis, width, frac_width, exp_bits, "
         "man_bits, bias, finite_only, has_nan, denormals, saturate, scaled, block, calibrator, percentile, momentum, "
         "bins)");
  }
}

RoleText read_role(const YAML::Node& n, const std::string& source, const std::string& what) {
  RoleText r;
  r.line = n.Mark().line + 1;
  const std::string where = at_line(source, r.line) + ": " + what;
  if (!n.IsMap()) fail(where + ": expected a mapping such as {format: int, bits: 8}");
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->second.IsScalar()) fail(where + ": '" + it->first.as<std::string>() + "' must be a scalar");
    r.fields.emplace_back(it->first.as<std::string>(), it->second.as<std::string>());
  }
  // Check every field now, so a typo fails at load time even if no node uses this entry.
  TensorSpec probe;
  for (auto& [k, v] : r.fields) apply_field(probe, k, v, where);
  // A bias may be int32 (the ONNX scheme: scale = input scale x weight scale, no calibration).
  const bool int32_bias = what == "bias" && probe.format.kind == FormatKind::Int && probe.format.bits == 32;
  if (!int32_bias) probe.format.validate(where);
  return r;
}

int role_index(Role r) { return static_cast<int>(r); }

bool read_roles(const std::string& key, const YAML::Node& v, std::optional<RoleText> (&roles)[4],
                const std::string& source) {
  for (Role r : kRoles)
    if (key == role_name(r)) {
      roles[role_index(r)] = read_role(v, source, key);
      return true;
    }
  return false;
}

// The default op type of a weight's output-channel axis (per-channel quantization).
int weight_axis(const ir::Graph& g, const ir::Node& n) {
  if (n.op_type == "ConvTranspose") return 1;
  if (weights_only(n)) return 1;  // LSTM/GRU/RNN W, R: [dirs, gates x hidden, K]
  if (n.op_type == "Gemm") return n.attr_int("transB", 0) ? 0 : 1;
  if (n.op_type == "MatMul") {
    const ir::TensorType* t = n.inputs.size() > 1 ? g.type_of(n.inputs[1]) : nullptr;
    return t && t->has_shape ? static_cast<int>(t->dims.size()) - 1 : 1;
  }
  return 0;  // Conv, FusedConv: [M, C/g, kH, kW]
}

bool matches(const Rule& r, const ir::Node& n, const ir::Graph& g) { return r.matches(n, &g); }

}  // namespace

bool weights_only(const ir::Node& n) {
  return (n.domain.empty() || n.domain == "ai.onnx") && (n.op_type == "LSTM" || n.op_type == "GRU" || n.op_type == "RNN");
}

bool NodeMatch::matches(const ir::Node& n, const ir::Graph* g) const {
  // FusedConv is a Conv to the user: it is what fuse_conv made of one.
  const bool type_ok = type.empty() || type == n.op_type || (type == "Conv" && n.op_type == "FusedConv");
  if (!type_ok || (!name.empty() && name != n.name) || (!regex.empty() && !std::regex_search(n.name, re))) return false;
  if (feeds.empty()) return true;
  if (!g || n.outputs.empty()) return false;
  for (const auto& u : g->nodes)
    if (std::find(u->inputs.begin(), u->inputs.end(), n.outputs[0]) != u->inputs.end() &&
        ("," + feeds + ",").find("," + u->op_type + ",") != std::string::npos)
      return true;
  return false;
}

std::string NodeMatch::describe() const {
  std::string m;
  if (!type.empty()) m += "type=" + type;
  if (!name.empty()) m += std::string(m.empty() ? "" : ",") + "name=" + name;
  if (!regex.empty()) m += std::string(m.empty() ? "" : ",") + "regex=" + regex;
  if (!feeds.empty()) m += std::string(m.empty() ? "" : ",") + "feeds=" + feeds;
  return m;
}

void NodeMatch::read(const YAML::Node& match, const std::string& where) {
  if (!match.IsMap()) fail(where + ": match: expected {type: ..., name: ..., regex: ..., feeds: ...}");
  for (auto m = match.begin(); m != match.end(); ++m) set(m->first.as<std::string>(), m->second.as<std::string>(), where);
}

void NodeMatch::set(const std::string& key, const std::string& value, const std::string& where) {
  if (key == "type") {
    type = value;
  } else if (key == "name") {
    name = value;
  } else if (key == "regex") {
    regex = value;
    try {
      re = std::regex(value);
    } catch (const std::regex_error& ex) {
      fail(where + ": regex '" + value + "' is invalid: " + ex.what());
    }
  } else if (key == "feeds") {
    feeds = value;
    feeds.erase(std::remove(feeds.begin(), feeds.end(), ' '), feeds.end());
  } else {
    fail(where + ": match: unknown key '" + key + "' (type, name, regex, feeds)");
  }
}

std::string TensorSpec::describe() const {
  std::string s = format.describe();
  if (derived_bias) return "int32 (scale = input scale x weight scale)";
  if (format.needs_calibration()) s += ", " + std::string(calib_method_name(calib.method));
  if (format.needs_calibration() && calib.method == CalibMethod::Percentile)
    s += fmt::format("({:g})", calib.percentile);
  return s;
}

nlohmann::json TensorSpec::to_json() const {
  nlohmann::json j{{"format", format.name()}, {"describe", describe()}};
  if (format.needs_calibration()) j["calibrator"] = calib_method_name(calib.method);
  return j;
}

std::string Rule::describe() const { return "rule at line " + std::to_string(line) + " (" + NodeMatch::describe() + ")"; }

nlohmann::json NodeChoice::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (Role r : kRoles)
    if (roles[role_index(r)]) j[role_name(r)] = roles[role_index(r)]->to_json();
  return j;
}

QuantConfig QuantConfig::load(const std::string& path) { return parse(read_file(path), path); }

QuantConfig QuantConfig::parse(const std::string& text, const std::string& source) {
  return read_yaml(source, [&] {
    const YAML::Node root = load_yaml(text, source);
    if (!root.IsMap()) fail(source + ": expected a mapping with 'default' and optional 'rules' and 'ops'");
    QuantConfig c;
    c.source = source;
    bool have_default = false;
    for (auto it = root.begin(); it != root.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      const YAML::Node v = it->second;  // (a handle: `it->` is a temporary)
      const std::string where = at_line(source, v.Mark().line + 1);
      if (key == "default") {
        if (!v.IsMap()) fail(where + ": default: expected a mapping of roles (input, weight, bias, output)");
        for (auto r = v.begin(); r != v.end(); ++r) {
          const std::string rk = r->first.as<std::string>();
          if (!read_roles(rk, r->second, c.defaults, source))
            fail(where + ": default: unknown role '" + rk + "' (input, weight, bias, output)");
        }
        have_default = true;
      } else if (key == "ops") {
        if (!v.IsSequence()) fail(where + ": ops: expected a list of op types");
        c.ops.clear();
        for (const auto& e : v) c.ops.push_back(e.as<std::string>());
      } else if (key == "rules") {
        if (!v.IsSequence()) fail(where + ": rules: expected a list");
        for (const auto& e : v) {
          Rule r;
          r.line = e.Mark().line + 1;
          const std::string rw = at_line(source, r.line) + ": rule";
          if (!e.IsMap()) fail(rw + ": expected a mapping with 'match'");
          for (auto f = e.begin(); f != e.end(); ++f) {
            const std::string fk = f->first.as<std::string>();
            if (fk == "match") {
              r.read(f->second, rw);
            } else if (fk == "skip") {
              r.skip = to_bool(f->second.as<std::string>(), rw + ": skip");
            } else if (!read_roles(fk, f->second, r.roles, source)) {
              fail(rw + ": unknown key '" + fk + "' (match, skip, input, weight, bias, output)");
            }
          }
          if (r.empty()) fail(rw + ": needs a match with type, name or regex");
          c.rules.push_back(std::move(r));
        }
      } else {
        fail(where + ": unknown top-level key '" + key + "' (default, rules, ops)");
      }
    }
    if (!have_default) fail(source + ": a 'default' entry is required");
    return c;
  });
}

std::vector<NodeChoice> resolve(const ir::Graph& g, const QuantConfig& c) {
  const std::set<std::string> ops(c.ops.begin(), c.ops.end());
  std::vector<bool> rule_used(c.rules.size(), false);
  std::vector<NodeChoice> out;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = *g.nodes[i];
    NodeChoice ch;
    ch.node = i;
    bool selected = ops.count(n.op_type) || (n.op_type == "FusedConv" && ops.count("Conv"));
    bool skip = false;
    for (size_t r = 0; r < c.rules.size(); ++r) {
      if (!matches(c.rules[r], n, g)) continue;
      rule_used[r] = true;
      ch.rules.push_back(static_cast<int>(r));
      if (c.rules[r].skip) skip = true;
      else selected = true;
    }
    if (!selected || skip) continue;
    for (Role role : kRoles) {
      if (weights_only(n) && role != Role::Weight) continue;  // the state stays float
      const int ri = role_index(role);
      TensorSpec spec;
      bool any = false;
      auto apply = [&](const std::optional<RoleText>& t) {
        if (!t) return;
        any = true;
        const std::string where = at_line(c.source, t->line) + ": " + role_name(role);
        // `signed` last, so that `symmetric` (which sets the usual signedness) never undoes it.
        for (auto& [k, v] : t->fields)
          if (k != "signed") apply_field(spec, k, v, where);
        for (auto& [k, v] : t->fields)
          if (k == "signed") apply_field(spec, k, v, where);
      };
      apply(c.defaults[ri]);
      for (int r : ch.rules) apply(c.rules[static_cast<size_t>(r)].roles[ri]);
      if (!any || spec.format.kind == FormatKind::None) continue;
      if (role == Role::Weight && !spec.axis_set) spec.format.axis = weight_axis(g, n);
      // Granularity is about scales: formats without one (fixed point, fp16, ...) are per tensor,
      // also when a rule switches an inherited per-channel int format to one of them.
      if (!spec.format.needs_calibration()) spec.format.granularity = Granularity::PerTensor;
      if (role == Role::Bias) {
        spec.derived_bias = spec.format.kind == FormatKind::Int && spec.format.bits == 32;
        if (spec.derived_bias) spec.format.granularity = Granularity::PerTensor;
      } else {
        spec.derived_bias = false;
      }
      if (!spec.derived_bias) spec.format.validate(n.where() + ": " + role_name(role));
      ch.roles[ri] = spec;
    }
    out.push_back(std::move(ch));
  }
  for (size_t r = 0; r < c.rules.size(); ++r)
    if (!rule_used[r]) fail(c.source + ": " + c.rules[r].describe() + " matches no node of the model");
  return out;
}

}  // namespace joule::quant
