#pragma once
// Choosing the algorithm of every node. The user's wishes are an AlgoSpec:
//   --algo guess | auto | reference          policy for every node without a rule (default guess)
//   --algo conv=winograd                     every node of an op class must use it (refused otherwise)
//   --algo conv=winograd,onednn              a preference list: the first that supports the node
//   --algo NODE_NAME=fft                     one node (node rules beat class rules)
// and the same in a YAML file (`default: auto`, `conv: [winograd, onednn]`, `NODE: fft`).
// List entries may be algorithm names, `reference`, `guess` (lowest estimate) or `auto`
// (measured on the real shape, remembered in the tuning cache).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "joule/kernels/algorithm.h"
#include "joule/kernels/tuning_cache.h"

namespace joule::kernels {

struct AlgoSpec {
  std::string policy = "guess";  // for nodes without a rule: guess | auto | reference
  std::vector<std::pair<std::string, std::vector<std::string>>> rules;  // target -> preference list
  std::string tuning_cache;      // "" = TuningCache::default_path()
  // On-request algorithms the policies rank with the others (--precision bf16: onednn_bf16).
  std::vector<std::string> also_rank;
  bool ranks(const Algorithm& a) const;

  // Adds one command-line value ("auto", "conv=a,b", "NODE=a"); throws BadInput when malformed.
  void add(const std::string& arg);
  // Reads a YAML file of `target: name | [names]` (and `default: policy`).
  void add_file(const std::string& path);
  bool uses_auto() const;
  // The preference list for a node of `op_class` (node rules beat class rules); null: the policy.
  const std::vector<std::string>* rule_for(const ir::Node& n, const std::string& op_class) const;
  // Should the channels_last pass move float conv `n` of `g` to N,H,W,C, where only onednn
  // (and onednn_bf16) runs it? Yes when the node's first choice is one of them, or guess/auto
  // and the estimates of the algorithms ranked say it is faster there
  // (kernels::channels_last_estimated_faster); `threads` 0: all cores.
  bool wants_channels_last(const ir::Graph& g, const ir::Node& n, int threads) const;
};

struct Selection {
  const Algorithm* algorithm = nullptr;  // null: the op's reference kernel
  std::unique_ptr<Kernel> kernel;        // prepared (null for reference)
  std::string source;                    // "guess", "auto (measured)", "auto (cached)", "forced", "preference"
  std::map<std::string, double> measured_ms;
};

class Selector {
 public:
  Selector(AlgoSpec spec, ThreadPool& pool);
  ~Selector();
  // Checks that every rule's target is an op class or a node of `g` (BadInput otherwise).
  void check_targets(const ir::Graph& g) const;
  // Chooses and prepares. Throws BadInput naming the node when a forced algorithm refuses it.
  Selection select(const NodeView& v);
  // Plan only: select() chooses without preparing (Selection::kernel null) where the policy
  // allows (guess and rules; auto measures, so it prepares).
  void set_plan_only(bool on) { plan_only_ = on; }
  // Persists new measurements (only when `auto` measured something).
  void save();
  std::string cache_problem() const;

 private:
  Selection choose_by_policy(const std::string& policy, const NodeView& v,
                             const std::vector<const Algorithm*>& candidates);
  Selection measure(const NodeView& v, const std::vector<const Algorithm*>& candidates);

  AlgoSpec spec_;
  ThreadPool& pool_;
  std::unique_ptr<TuningCache> cache_;
  bool plan_only_ = false;
};

// Nodes whose input shapes are known only at run time (kernels/by_shape.cpp): `kByShape` labels
// them in plans and profiles; their kernel chooses and prepares an algorithm per distinct input
// shape when it runs, with choose_for_shape (the rule's list in order, else the lowest estimate;
// null: the reference kernel).
extern const Algorithm kByShape;
std::unique_ptr<Kernel> make_by_shape_kernel(const NodeView& v, const AlgoSpec& spec);
const Algorithm* choose_for_shape(const AlgoSpec& spec, const NodeView& v);

// The tuning-cache key of a node: op, input shapes/dtypes, attributes, threads, CPU, version.
std::string tuning_key(const NodeView& v);

}  // namespace joule::kernels
