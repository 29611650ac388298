// Nodes whose input shapes are known only at run time (a detector's per-detection heads, a
// batch that depends on the data): no algorithm can be prepared when the session is planned,
// so the choice is made at run time, once per distinct set of input shapes, among the
// algorithms that support the node at those shapes (the rule's list in its order, else the
// lowest estimate: `auto` does not measure here), and the prepared kernel is kept for the next
// run with the same shapes (the 16 most recent). Shapes no algorithm supports run the
// reference kernel.
#include <mutex>

#include "joule/core/error.h"
#include "joule/kernels/select.h"

namespace joule::kernels {

namespace {

constexpr size_t kKept = 16;

class ByShapeKernel final : public Kernel {
 public:
  ByShapeKernel(const NodeView& v, AlgoSpec spec) : spec_(std::move(spec)), threads_(v.threads), opset_(v.opset) {
    for (size_t i = 0; i < v.in_types.size(); ++i) constant_.push_back(v.constant(i) != nullptr);
  }

  void run(ops::KernelContext& k) const override {
    const Kernel* chosen = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      chosen = kernel_for(k);
    }
    if (chosen) chosen->run(k);
    else ops::find_op(k.node.domain, k.node.op_type)->run(k);
  }

  std::string detail() const override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string d;
    for (const Entry& e : kept_) d += (d.empty() ? "" : "; ") + e.algorithm + " at " + e.key;
    return d.empty() ? "chosen at run time per input shape" : d;
  }

 private:
  struct Entry {
    std::string key, algorithm;  // input types; "reference" when none supports them
    std::unique_ptr<Kernel> kernel;
  };

  const Kernel* kernel_for(const ops::KernelContext& k) const {
    std::string key;
    for (const Tensor* t : k.inputs) key += (key.empty() ? "" : ",") + (t ? t->describe() : std::string("-"));
    for (size_t i = 0; i < kept_.size(); ++i)
      if (kept_[i].key == key) return kept_[i].kernel.get();
    // The node as the session would have seen it with these shapes.
    std::vector<ir::TensorType> in(k.inputs.size());
    NodeView v{k.node, {}, {}, {}, threads_, opset_};
    ops::InferContext ic{k.node, opset_, {}, {}, {}, {}};
    for (size_t i = 0; i < k.inputs.size(); ++i) {
      const Tensor* t = k.inputs[i];
      if (t) in[i] = ir::TensorType::of_value(*t);
      v.in_types.push_back(t ? &in[i] : nullptr);
      v.constants.push_back(t && i < constant_.size() && constant_[i] ? t : nullptr);
      ic.input_types.push_back(v.in_types.back());
      ic.input_values.push_back(v.constants.back());
    }
    ic.output_types.resize(k.node.outputs.size());
    ic.output_values.resize(k.node.outputs.size());
    ops::find_op(k.node.domain, k.node.op_type)->infer(ic);
    for (const ir::TensorType& t : ic.output_types) v.out_types.push_back(&t);
    Entry e{key, "reference", nullptr};
    if (const Algorithm* a = choose_for_shape(spec_, v)) {
      e.algorithm = a->name;
      e.kernel = a->prepare(v);
    }
    if (kept_.size() == kKept) kept_.erase(kept_.begin());
    kept_.push_back(std::move(e));
    return kept_.back().kernel.get();
  }

  AlgoSpec spec_;
  int threads_;
  int64_t opset_;
  std::vector<bool> constant_;  // input i is a constant of the graph
  mutable std::mutex mu_;
  mutable std::vector<Entry> kept_;
};

std::string no_support(const NodeView&) { return "chosen by the session for nodes whose shapes are known only at run time"; }
double no_estimate(const NodeView&) { return 0; }
std::unique_ptr<Kernel> no_prepare(const NodeView&) { return nullptr; }

}  // namespace

const Algorithm kByShape{"*", "by_shape",
                         "nodes whose input shapes are known only at run time: the algorithm chosen per distinct "
                         "shape when it first runs, kept for the next runs",
                         no_support, no_estimate, no_prepare, true};

std::unique_ptr<Kernel> make_by_shape_kernel(const NodeView& v, const AlgoSpec& spec) {
  return std::make_unique<ByShapeKernel>(v, spec);
}

const Algorithm* choose_for_shape(const AlgoSpec& spec, const NodeView& v) {
  const std::string cls = op_class_of(v.node);
  if (const std::vector<std::string>* rule = spec.rule_for(v.node, cls)) {
    std::string refused;
    bool rank = false;
    for (const std::string& name : *rule) {
      if (name == "reference") return nullptr;
      if ((rank = name == "guess" || name == "auto")) break;
      const Algorithm* a = find_algorithm(cls, name);
      if (!a) continue;
      const std::string why = a->supports(v);
      if (why.empty()) return a;
      refused += (refused.empty() ? "" : "; ") + name + ": " + why;
    }
    if (!rank) fail(v.node.where() + ": no requested algorithm supports it at its run-time shapes (" + refused + ")");
  } else if (spec.policy == "reference") {
    return nullptr;
  }
  const Algorithm* best = nullptr;
  double best_ms = 0;
  for (const Algorithm* a : algorithms_for(cls)) {
    if (!spec.ranks(*a) || !a->supports(v).empty()) continue;
    const double ms = a->estimate_ms(v);
    if (!best || ms < best_ms) best = a, best_ms = ms;
  }
  return best;
}

}  // namespace joule::kernels
