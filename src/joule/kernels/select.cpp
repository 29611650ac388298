#include "joule/kernels/select.h"

// yaml-cpp's node iterators trip GCC 12 false positives in code that uses them.
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>

#include "joule/core/cpu_features.h"
#include "joule/core/error.h"
#include "joule/core/thread_pool.h"
#include "joule/core/yaml_error.h"
#include "joule/cuda/backend.h"
#include "joule/kernels/conv/conv_node.h"

namespace joule::kernels {

namespace {

bool is_policy(const std::string& s) { return s == "guess" || s == "auto" || s == "reference"; }

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> r;
  size_t b = 0;
  while (b <= s.size()) {
    size_t e = s.find(',', b);
    if (e == std::string::npos) e = s.size();
    std::string item = s.substr(b, e - b);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    r.push_back(item);
    b = e + 1;
  }
  return r;
}

std::string known_names() {
  std::string s = "reference, guess, auto";
  for (const Algorithm* a : all_algorithms()) s += std::string(", ") + a->op_class + ":" + a->name;
  return s;
}

void check_entry(const std::string& where, const std::string& name) {
  if (name.empty()) fail(where + ": empty algorithm name");
  if (is_policy(name)) return;
  for (const Algorithm* a : all_algorithms())
    if (name == a->name) return;
  fail(where + ": unknown algorithm '" + name + "' (known: " + known_names() + ")");
}

void add_rule(AlgoSpec& s, const std::string& where, const std::string& target, std::vector<std::string> names) {
  if (target.empty()) fail(where + ": empty target before '='");
  if (names.empty()) fail(where + ": no algorithm given for '" + target + "'");
  for (auto& n : names) check_entry(where, n);
  s.rules.emplace_back(target, std::move(names));
}

void fill_random(Tensor& t, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 12345u;
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    x = x * 1664525u + 1013904223u;
    p[i] = static_cast<float>(x >> 8) / 8388608.0f - 1.0f;
  }
}

double time_kernel(const Kernel& k, const NodeView& v, const std::vector<const Tensor*>& inputs, ThreadPool& pool) {
  using clock = std::chrono::steady_clock;
  ops::KernelContext ctx{v.node, 0, inputs, {}, &pool};
  ctx.outputs.resize(v.node.outputs.size());
  k.run(ctx);  // warm-up
  double best = std::numeric_limits<double>::infinity(), total = 0;
  for (int r = 0; r < 10 && (r < 3 || total < 30.0); ++r) {
    const auto t0 = clock::now();
    k.run(ctx);
    const double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    best = std::min(best, ms);
    total += ms;
  }
  return best;
}

}  // namespace

void AlgoSpec::add(const std::string& arg) {
  const std::string where = "--algo '" + arg + "'";
  const size_t eq = arg.find('=');
  if (eq == std::string::npos) {
    if (!is_policy(arg))
      fail(where + ": expected guess, auto, reference or TARGET=ALGO[,ALGO...] (TARGET: conv, gemm, matmul or a node name)");
    policy = arg;
    return;
  }
  add_rule(*this, where, arg.substr(0, eq), split_list(arg.substr(eq + 1)));
}

void AlgoSpec::add_file(const std::string& path) {
  return read_yaml(path, [&] {
    YAML::Node root;
    try {
      root = YAML::LoadFile(path);
    } catch (const YAML::BadFile&) {
      fail(path + ": cannot read the algorithm file");
    } catch (const YAML::Exception& e) {
      fail(path + ": not valid YAML: " + e.what());
    }
    if (!root.IsMap()) fail(path + ": expected a mapping of TARGET: ALGO or [ALGO, ...]");
    for (auto it = root.begin(); it != root.end(); ++it) {
      const std::string target = it->first.as<std::string>();
      const std::string where = path + ": '" + target + "'";
      std::vector<std::string> names;
      if (it->second.IsScalar()) {
        names = split_list(it->second.as<std::string>());
      } else if (it->second.IsSequence()) {
        const YAML::Node list = it->second;  // (a handle: `it->` is a temporary, too short-lived for a range-for)
        for (const auto& e : list) names.push_back(e.as<std::string>());
      } else {
        fail(where + ": expected an algorithm name or a list of names");
      }
      if (target == "default") {
        if (names.size() != 1 || !is_policy(names[0])) fail(where + ": default must be guess, auto or reference");
        policy = names[0];
      } else {
        add_rule(*this, where, target, std::move(names));
      }
    }
  });
}

bool AlgoSpec::uses_auto() const {
  if (policy == "auto") return true;
  for (auto& [t, names] : rules)
    for (auto& n : names)
      if (n == "auto") return true;
  return false;
}

bool AlgoSpec::wants_channels_last(const ir::Graph& g, const ir::Node& n, int threads) const {
  const std::vector<std::string>* rule = rule_for(n, "conv");
  const std::string& first = rule && !rule->empty() ? rule->front() : policy;
  const std::vector<std::string>& nhwc = channels_last_conv_algorithms();
  if (std::find(nhwc.begin(), nhwc.end(), first) != nhwc.end()) return true;
  if (first != "guess" && first != "auto") return false;
  return channels_last_estimated_faster(g, n, threads > 0 ? threads : ThreadPool::default_threads(), *this);
}

bool AlgoSpec::ranks(const Algorithm& a) const {
  return !a.on_request_only || std::find(also_rank.begin(), also_rank.end(), a.name) != also_rank.end();
}

std::string tuning_key(const NodeView& v) {
  const ir::Node& n = v.node;
  nlohmann::json j;
  j["op"] = (n.domain.empty() ? "" : n.domain + ".") + n.op_type;
  for (size_t i = 0; i < v.in_types.size(); ++i) j["in"].push_back(v.in_types[i] ? v.in_types[i]->str() : "");
  for (auto& [k, a] : n.attrs) j["attrs"][k] = ir::attribute_str(a);
  if (v.device >= 0) {
    j["gpu"] = cuda::gpu_model(v.device);
    if (n.meta.contains("gpu_math")) j["math"] = n.meta["gpu_math"];  // tf32 and fp32 time apart
  } else {
    j["threads"] = v.threads;
    j["cpu"] = cpu_features().model + " [" + cpu_features().isa + "]";
  }
  j["joule"] = JOULE_VERSION;
  return j.dump();
}

Selector::Selector(AlgoSpec spec, ThreadPool& pool) : spec_(std::move(spec)), pool_(pool) {
  if (spec_.uses_auto())
    cache_ = std::make_unique<TuningCache>(spec_.tuning_cache.empty() ? TuningCache::default_path() : spec_.tuning_cache);
}

Selector::~Selector() = default;

std::string Selector::cache_problem() const { return cache_ ? cache_->load_problem() : ""; }

void Selector::save() {
  if (cache_) cache_->save();
}

void Selector::check_targets(const ir::Graph& g) const {
  for (auto& [target, names] : spec_.rules) {
    bool is_class = false;
    for (const Algorithm* a : all_algorithms()) is_class = is_class || target == a->op_class;
    if (is_class) {
      for (auto& name : names)
        if (!is_policy(name) && !find_algorithm(target, name))
          fail("--algo " + target + "=" + name + ": '" + name + "' is not an algorithm for " + target);
      continue;
    }
    const ir::Node* node = nullptr;
    for (auto& n : g.nodes)
      if (n->name == target) node = n.get();
    if (!node) fail("--algo: '" + target + "' is neither an op class (conv, gemm, matmul) nor a node of the model");
    const std::string cls = op_class_of(*node);
    for (auto& name : names)
      if (!is_policy(name) && !find_algorithm(cls, name))
        fail("--algo " + target + "=" + name + ": " + node->where() + " has no algorithm '" + name + "'" +
             (cls.empty() ? " (only the reference kernel exists for this op)" : ""));
  }
}

const std::vector<std::string>* AlgoSpec::rule_for(const ir::Node& n, const std::string& op_class) const {
  const std::vector<std::string>* by_class = nullptr;
  for (auto& [target, names] : rules) {
    if (target == n.name) return &names;
    if (target == op_class) by_class = &names;
  }
  return by_class;
}

namespace {
// a->prepare(v), or null when the algorithm's library refuses the node after supports() let it
// through (oneDNN 2.6 creates no primitive for some shapes with some post-ops: a 1-D grouped
// conv with a swish epilogue): the caller moves on to the next algorithm (on the CPU; the
// reference kernel when none is left). `why` gets the refusal.
std::unique_ptr<Kernel> try_prepare(const Algorithm* a, const NodeView& v, std::string* why) {
  try {
    return a->prepare(v);
  } catch (const Error& e) {
    if (e.kind() != Error::Kind::Unsupported || v.device >= 0) throw;  // (a GPU node has no CPU fallback here)
    *why += std::string(why->empty() ? "" : "; ") + a->name + ": " + e.what();
    return nullptr;
  }
}
}  // namespace

Selection Selector::measure(const NodeView& v, const std::vector<const Algorithm*>& candidates) {
  // The candidates differ when on-request algorithms are ranked too (--precision bf16).
  std::string key = tuning_key(v);
  for (const std::string& a : spec_.also_rank) key += " +" + a;
  std::string refused;
  if (const TuningEntry* e = cache_->find(key)) {
    for (const Algorithm* a : candidates)
      if (e->algorithm == a->name)
        if (std::unique_ptr<Kernel> k = try_prepare(a, v, &refused)) return Selection{a, std::move(k), "auto (cached)", e->ms};
  }
  // Random values for the non-constant inputs at their planned shapes.
  std::vector<Tensor> owned(v.in_types.size());
  std::vector<const Tensor*> inputs(v.in_types.size(), nullptr);
  for (size_t i = 0; i < v.in_types.size(); ++i) {
    if (!v.in_types[i]) continue;
    if (v.constant(i)) {
      inputs[i] = v.constant(i);
      continue;
    }
    owned[i] = Tensor(v.in_types[i]->dtype, v.in_types[i]->static_shape());
    if (owned[i].dtype() == DType::Float32) fill_random(owned[i], static_cast<uint32_t>(i));
    if (owned[i].dtype() == DType::Float16 || owned[i].dtype() == DType::BFloat16) {  // (GPU nodes in half precision)
      Tensor f(DType::Float32, owned[i].shape());
      fill_random(f, static_cast<uint32_t>(i));
      owned[i] = f.cast(owned[i].dtype());
    }
    inputs[i] = &owned[i];
  }
  Selection best;
  double best_ms = std::numeric_limits<double>::infinity();
  std::map<std::string, double> times;
  for (const Algorithm* a : candidates) {
    std::unique_ptr<Kernel> k = try_prepare(a, v, &refused);
    if (!k) continue;
    const double ms = v.device >= 0 ? cuda::time_kernel(*k, v, inputs, cuda::host_inputs(v.node), v.device)
                                    : time_kernel(*k, v, inputs, pool_);
    times[a->name] = ms;
    if (ms < best_ms) {
      best_ms = ms;
      best.algorithm = a;
      best.kernel = std::move(k);
    }
  }
  if (!best.algorithm) return Selection{nullptr, nullptr, "reference (" + refused + ")", {}};
  best.source = "auto (measured)";
  best.measured_ms = times;
  cache_->put(key, TuningEntry{best.algorithm->name, times});
  return best;
}

Selection Selector::choose_by_policy(const std::string& policy, const NodeView& v,
                                     const std::vector<const Algorithm*>& candidates) {
  if (policy == "reference" || candidates.empty()) return Selection{nullptr, nullptr, policy, {}};
  if (policy == "auto" && candidates.size() > 1) return measure(v, candidates);
  // The lowest estimate first; the next when the library refuses it at prepare time.
  std::vector<std::pair<double, const Algorithm*>> ranked;
  for (const Algorithm* a : candidates) ranked.emplace_back(a->estimate_ms(v), a);
  std::stable_sort(ranked.begin(), ranked.end(), [](auto& x, auto& y) { return x.first < y.first; });
  const char* source = policy == "auto" ? "auto (only candidate)" : "guess";
  if (plan_only_) return Selection{ranked.front().second, nullptr, source, {}};
  std::string refused;
  for (auto& [ms, a] : ranked)
    if (std::unique_ptr<Kernel> k = try_prepare(a, v, &refused))
      return Selection{a, std::move(k), source, {}};
  return Selection{nullptr, nullptr, "reference (" + refused + ")", {}};
}

Selection Selector::select(const NodeView& v) {
  const bool gpu = v.device >= 0;  // placed on a GPU: only its algorithms (runtime/placement.h)
  const std::string cls = gpu ? cuda::op_class(v.node) : op_class_of(v.node);
  if (cls.empty()) return Selection{nullptr, nullptr, "no fast algorithm", {}};
  std::vector<const Algorithm*> supported;
  std::string reasons;
  for (const Algorithm* a : algorithms_for(cls, gpu)) {
    const std::string r = a->supports(v);
    if (r.empty())
      supported.push_back(a);
    else
      reasons += std::string(reasons.empty() ? "" : "; ") + a->name + ": " + r;
  }
  // Nothing supports the node at its planned shapes because some are known only at run time:
  // the choice waits for them (unless the user asked for the reference kernel).
  const bool dynamic = std::any_of(v.in_types.begin(), v.in_types.end(), [](const ir::TensorType* t) {
    return t && t->is_tensor() && !t->is_static();
  });
  const std::vector<std::string>* rule = spec_.rule_for(v.node, cls);
  const bool wants_reference = rule ? std::find(rule->begin(), rule->end(), "reference") != rule->end()
                                    : spec_.policy == "reference";
  if (gpu && supported.empty()) fail_internal(v.node.where() + ": placed on the GPU but no CUDA algorithm runs it (" + reasons + ")");
  if (supported.empty() && dynamic && !wants_reference)
    return Selection{&kByShape, make_by_shape_kernel(v, spec_), "by shape at run time", {}};
  std::vector<const Algorithm*> rankable;  // what the policies choose among
  for (const Algorithm* a : supported)
    if (spec_.ranks(*a)) rankable.push_back(a);
  if (rankable.empty()) rankable = supported;  // an on-request algorithm beats the reference kernel
  if (!rule) return choose_by_policy(gpu && spec_.policy == "reference" ? "guess" : spec_.policy, v, rankable);
  std::string refused;
  for (const std::string& name : *rule) {
    if (is_policy(name)) {
      if (gpu && name == "reference") continue;  // the reference kernels run on the CPU only
      return choose_by_policy(name, v, rankable);
    }
    const Algorithm* a = find_algorithm(cls, name, gpu);
    if (!a) {
      if (find_algorithm(cls, name))
        refused += std::string(refused.empty() ? "" : "; ") + name + ": runs on the " + (gpu ? "CPU" : "GPU") + " only";
      continue;
    }
    const std::string r = a->supports(v);
    if (!r.empty()) {
      refused += std::string(refused.empty() ? "" : "; ") + name + ": " + r;
    } else if (plan_only_) {
      return Selection{a, nullptr, rule->size() == 1 ? "forced" : "preference", {}};
    } else if (std::unique_ptr<Kernel> k = try_prepare(a, v, &refused)) {
      return Selection{a, std::move(k), rule->size() == 1 ? "forced" : "preference", {}};
    }
  }
  fail(v.node.where() + ": no requested algorithm supports it (" + refused + ")");
}

}  // namespace joule::kernels
