#include "joule/quant/automp.h"

// yaml-cpp's node iterators trip GCC 12 false positives in code that uses them.
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "joule/core/error.h"

namespace joule::quant {

namespace {

int int_rung_bits(const std::string& rung) {
  if (rung.size() > 3 && rung.rfind("int", 0) == 0 && rung.find_first_not_of("0123456789", 3) == std::string::npos)
    return std::stoi(rung.substr(3));
  return 0;
}

bool is_top(const std::vector<std::string>& ladder, int idx) { return idx + 1 >= static_cast<int>(ladder.size()); }

}  // namespace

size_t AutoMpResult::promoted() const {
  size_t n = 0;
  for (auto& r : rung) n += !r.empty();
  return n;
}

void check_ladder(const std::vector<std::string>& ladder) {
  if (ladder.empty()) fail("--ladder: give at least one rung (e.g. int16,bf16,fp32)");
  for (const std::string& r : ladder) {
    const int bits = int_rung_bits(r);
    if (bits) {
      if (bits < 2 || bits > 16) fail("--ladder: '" + r + "': integer rungs have 2 to 16 bits");
    } else if (r != "fp16" && r != "bf16" && r != "fp32") {
      fail("--ladder: unknown rung '" + r + "' (intN, fp16, bf16, fp32)");
    }
  }
}

std::optional<NodeChoice> promote(const NodeChoice& c, const std::string& rung) {
  if (rung == "fp32") return std::nullopt;
  NodeChoice p = c;
  const int bits = int_rung_bits(rung);
  for (Role r : kRoles) {
    auto& t = p.roles[static_cast<int>(r)];
    if (!t) continue;
    if (r == Role::Bias && t->derived_bias) {
      if (!bits) t.reset();  // an int32 bias needs integer input and weight scales
      continue;
    }
    Format& f = t->format;
    if (bits) {
      if (f.kind != FormatKind::Int) {
        const bool symmetric = r == Role::Weight || r == Role::Bias;
        f = int_format(bits, symmetric, symmetric ? f.granularity : Granularity::PerTensor, f.axis);
        if (t->calib.method != CalibMethod::MinMax && t->calib.method != CalibMethod::Percentile)
          t->calib.method = CalibMethod::MinMax;
      }
      f.bits = bits;
    } else {
      f = Format{};
      f.kind = rung == "fp16" ? FormatKind::Float16 : FormatKind::BFloat16;
    }
  }
  return p;
}

AutoMpResult automp(const std::vector<NodeChoice>& start, const std::vector<size_t>& ranking,
                    const std::function<double(const std::vector<NodeChoice>&)>& score, double reference,
                    const AutoMpOptions& o) {
  check_ladder(o.ladder);
  if (o.strategy != "greedy" && o.strategy != "bisect")
    fail("--strategy: expected greedy or bisect, got '" + o.strategy + "'");
  AutoMpResult r;
  r.reference = reference;
  std::vector<int> level(start.size(), -1);  // -1: config format; else index into the ladder
  auto choices_at = [&](const std::vector<int>& lv) {
    std::vector<NodeChoice> v;
    for (size_t i = 0; i < start.size(); ++i) {
      if (lv[i] < 0) {
        v.push_back(start[i]);
      } else if (auto p = promote(start[i], o.ladder[static_cast<size_t>(lv[i])])) {
        v.push_back(*p);
      }
    }
    return v;
  };
  auto evaluate = [&](const std::vector<int>& lv, const std::string& action) {
    if (o.progress) o.progress(action);
    const double s = score(choices_at(lv));
    const bool met = reference - s <= o.max_drop;
    r.steps.push_back({action, s, met});
    return met;
  };
  auto node_label = [&](size_t i) { return i < o.names.size() ? o.names[i] : fmt::format("#{}", i); };
  bool met = evaluate(level, "all at the config's formats");
  r.start_score = r.steps.back().score;
  if (!met && o.strategy == "greedy") {
    // Climb: the most damaging layer first, one rung at a time, until the bound holds.
    for (size_t k = 0; k < ranking.size() && !met; ++k) {
      const size_t i = ranking[k];
      while (!met && !is_top(o.ladder, level[i])) {
        ++level[i];
        met = evaluate(level, fmt::format("{} -> {}", node_label(i), o.ladder[static_cast<size_t>(level[i])]));
      }
    }
    // Descend: give back precision that the later promotions made unnecessary.
    if (met)
      for (size_t k = ranking.size(); k-- > 0;) {
        const size_t i = ranking[k];
        while (level[i] >= 0) {
          std::vector<int> lower = level;
          --lower[i];
          const std::string to = lower[i] < 0 ? "config format" : o.ladder[static_cast<size_t>(lower[i])];
          if (!evaluate(lower, fmt::format("{} back to {}", node_label(i), to))) break;
          level = lower;
        }
      }
  } else if (!met) {
    // Bisect on how many of the top-ranked layers go straight to the last rung.
    const int top = static_cast<int>(o.ladder.size()) - 1;
    auto top_k = [&](size_t k) {
      std::vector<int> lv(start.size(), -1);
      for (size_t j = 0; j < k && j < ranking.size(); ++j) lv[ranking[j]] = top;
      return lv;
    };
    size_t lo = 0, hi = ranking.size();  // lo fails; hi assumed to pass (everything at the last rung)
    if (!evaluate(top_k(hi), fmt::format("top {} -> {}", hi, o.ladder.back()))) {
      hi = ranking.size() + 1;  // not even everything helps: report it
    }
    while (hi <= ranking.size() && hi - lo > 1) {
      const size_t mid = (lo + hi) / 2;
      if (evaluate(top_k(mid), fmt::format("top {} -> {}", mid, o.ladder.back()))) hi = mid;
      else lo = mid;
    }
    if (hi <= ranking.size()) {
      level = top_k(hi);
      met = true;
    }
  }
  // Final state: re-score only if the last evaluation was not of it.
  r.choices = choices_at(level);
  for (size_t i = 0; i < start.size(); ++i)
    r.rung.push_back(level[i] < 0 ? std::string() : o.ladder[static_cast<size_t>(level[i])]);
  r.final_score = r.steps.back().score;
  r.met = met;
  if (met && !r.steps.back().met) r.final_score = score(r.choices);
  return r;
}

std::string automp_config_yaml(const std::string& config_yaml, const std::string& source, const ir::Graph& g,
                               const std::vector<NodeChoice>& start, const AutoMpResult& r) {
  YAML::Node root = YAML::Load(config_yaml);
  YAML::Node rules = root["rules"];
  for (size_t i = 0; i < start.size(); ++i) {
    if (r.rung[i].empty()) continue;
    YAML::Node rule;
    rule["match"]["name"] = g.nodes[start[i].node]->name;
    const std::string& rung = r.rung[i];
    if (rung == "fp32") {
      rule["skip"] = true;
    } else {
      const int bits = int_rung_bits(rung);
      for (Role role : kRoles) {
        if (!start[i].roles[static_cast<int>(role)] || role == Role::Bias) continue;
        YAML::Node f;
        if (bits) {
          f["format"] = "int";
          f["bits"] = bits;
        } else {
          f["format"] = rung;
        }
        rule[role_name(role)] = f;
      }
    }
    rules.push_back(rule);
  }
  root["rules"] = rules;
  YAML::Emitter out;
  out << root;
  return std::string("# AutoMP result: ") + source + " with the layers it moved to higher precision.\n" +
         out.c_str() + "\n";
}

}  // namespace joule::quant
