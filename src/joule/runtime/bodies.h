#pragma once
// The bodies of one control-flow node (If, Loop, Scan, SequenceMap) as sessions of their own:
// each graph attribute becomes a Session over the body (its graph inputs, then the outer-scope
// values it reads), so a body runs on the kernels the Selector picks (`--algo` rules included),
// with its own memory plan, instead of the reference interpreter. A body session is built at
// the body's first run, when the types of its inputs are known (the body's declared types, with
// shapes left symbolic where it declares none, so the same session serves every iteration and
// the kernels are chosen per shape at run time); one whose session cannot be built (an op the
// planner refuses) runs on the interpreter, and `fallback` says why.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "joule/ops/op.h"
#include "joule/runtime/session.h"

namespace joule::runtime {

class Bodies final : public ops::BodyRunner {
 public:
  // `owner`: the node whose graph attributes these are; `options`: the parent session's (CPU
  // placement, no observers of its own).
  Bodies(const ir::Node& owner, SessionOptions options);
  ~Bodies() override;

  std::vector<Tensor> run(const ops::KernelContext& c, const ir::Graph& body, const std::vector<Tensor>& inputs) const override;

  // The parent's observers while one of its steps runs this node (null otherwise): each body
  // node is timed and reported to them through Observer::body_node.
  void attach(const std::vector<Observer*>* observers, size_t step) const {
    observers_ = observers;
    step_ = step;
  }

  struct Stats {
    std::string attribute;  // then_branch, else_branch, body
    long long runs = 0;     // body runs (Loop iterations, Scan steps, branch taken)
    std::string fallback;   // why the body runs on the interpreter ("" when planned)
    std::vector<std::string> algorithms;  // per body node, in its session's run order
  };
  // One entry per graph attribute that has run.
  std::vector<Stats> stats() const;

 private:
  struct Body;
  Body& body_for(const ir::Graph& g, const std::vector<Tensor>& inputs, const ops::KernelContext& c) const;

  const ir::Node& owner_;
  SessionOptions options_;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Body>> bodies_;
  mutable const std::vector<Observer*>* observers_ = nullptr;
  mutable size_t step_ = 0;
};

// True when a node has graph-valued attributes (If, Loop, Scan, SequenceMap).
bool has_bodies(const ir::Node& n);

}  // namespace joule::runtime
