#include "joule/runtime/session.h"

#include <malloc.h>

#include <cstdio>
#include <unordered_map>

#include "joule/ops/op.h"
#include "joule/passes/check_support.h"
#include "joule/passes/infer_shapes.h"

namespace joule::runtime {

namespace {
// Tracks live bytes, counting each underlying buffer once.
class LiveBytes {
 public:
  void add(const Tensor& t) {
    if (!t.defined() || !t.is_tensor()) return;
    auto& e = bufs_[t.raw()];
    if (e.refs++ == 0) {
      e.bytes = t.nbytes();
      live_ += e.bytes;
      if (live_ > peak_) peak_ = live_;
    }
  }
  void remove(const Tensor& t) {
    if (!t.defined() || !t.is_tensor()) return;
    auto it = bufs_.find(t.raw());
    if (it == bufs_.end()) return;
    if (--it->second.refs == 0) {
      live_ -= it->second.bytes;
      bufs_.erase(it);
    }
  }
  size_t peak() const { return peak_; }

 private:
  struct Entry {
    size_t bytes = 0;
    int refs = 0;
  };
  std::unordered_map<const void*, Entry> bufs_;
  size_t live_ = 0, peak_ = 0;
};
}  // namespace

Session::Session(ir::Graph graph, SessionOptions options) : graph_(std::move(graph)) {
  // Activations whose size is known only at run time (a detector's boxes) are allocated at every
  // run, and from fresh mmap'd pages each costs a page fault per 4 KB (Faster R-CNN: a fifth of
  // its time). malloc keeps freed blocks up to 64 MB in its heap for reuse and trims the heap
  // only past 512 MB (the explicit malloc_trim calls below still give released weights back).
  static const bool heap_tuned = [] { return mallopt(M_MMAP_THRESHOLD, 64 << 20) && mallopt(M_TRIM_THRESHOLD, 512 << 20); }();
  (void)heap_tuned;
  passes::require_supported(graph_, graph_.name.empty() ? "model" : graph_.name);
  passes::infer_shapes(graph_, options.input_shapes);
  pool_ = std::make_unique<ThreadPool>(options.threads > 0 ? options.threads : ThreadPool::default_threads());

  auto slot = [&](const std::string& v) {
    auto it = slot_of_.find(v);
    if (it != slot_of_.end()) return it->second;
    int s = static_cast<int>(slot_of_.size());
    slot_of_[v] = s;
    return s;
  };
  for (auto& [name, t] : graph_.initializers) {
    int s = slot(name);
    if (constant_slots_.size() <= static_cast<size_t>(s)) constant_slots_.resize(s + 1);
    constant_slots_[s] = t;
  }
  for (auto& in : graph_.inputs) input_slots_.push_back(slot(in));
  std::vector<size_t> order = graph_.topo_order();
  std::map<std::string, bool> defined;
  for (auto& in : graph_.inputs) defined[in] = true;
  for (auto& [name, t] : graph_.initializers) defined[name] = true;
  for (size_t idx : order) {
    const ir::Node& n = *graph_.nodes[idx];
    Step st{idx, ops::find_op(n.domain, n.op_type), nullptr, {}, {}, {}};
    for (auto& in : n.inputs) {
      if (in.empty()) {
        st.in_slots.push_back(-1);
        continue;
      }
      if (!defined.count(in))
        fail(n.where() + ": input '" + in + "' is not produced by any node, input or initializer");
      st.in_slots.push_back(slot(in));
    }
    for (auto& out : n.outputs) {
      st.out_slots.push_back(out.empty() ? -1 : slot(out));
      if (!out.empty()) defined[out] = true;
    }
    steps_.push_back(std::move(st));
  }
  for (auto& out : graph_.outputs) {
    if (!defined.count(out)) fail("graph output '" + out + "' is not produced by any node");
    output_slots_.push_back(slot(out));
  }
  constant_slots_.resize(slot_of_.size());
  // Last use of every slot; graph outputs and constants are never freed.
  std::vector<int> last(slot_of_.size(), -1);
  for (size_t i = 0; i < steps_.size(); ++i) {
    for (int s : steps_[i].in_slots)
      if (s >= 0) last[s] = static_cast<int>(i);
    for (int s : steps_[i].out_slots)
      if (s >= 0 && last[s] < static_cast<int>(i)) last[s] = static_cast<int>(i);  // unused output
  }
  for (int s : output_slots_) last[s] = -1;
  for (size_t s = 0; s < last.size(); ++s)
    if (last[s] >= 0 && !constant_slots_[s].defined()) steps_[last[s]].free_after.push_back(static_cast<int>(s));
  choose_kernels(options.algo, options.release_packed_constants);
  plan_activations(last);
}

void Session::plan_activations(const std::vector<int>& last) {
  std::vector<PlannedValue> values(slot_of_.size());
  slot_type_.assign(slot_of_.size(), ir::TensorType{});
  std::vector<bool> is_output(slot_of_.size(), false);
  for (int s : output_slots_) is_output[static_cast<size_t>(s)] = true;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& st = steps_[i];
    const ir::Node& n = *graph_.nodes[st.node];
    for (size_t j = 0; j < st.out_slots.size(); ++j) {
      const int s = st.out_slots[j];
      if (s < 0) continue;
      PlannedValue& v = values[static_cast<size_t>(s)];
      v.def = static_cast<int>(i);
      v.last = std::max(static_cast<int>(i), last[static_cast<size_t>(s)]);
      if (j == 0 && st.def->view && !st.in_slots.empty()) v.alias_of = st.in_slots[0];
      const ir::TensorType* t = graph_.type_of(n.outputs[j]);
      if (is_output[static_cast<size_t>(s)] || !t || !t->is_static() || dtype_size(t->dtype) == 0 ||
          t->dtype == DType::String)
        continue;
      slot_type_[static_cast<size_t>(s)] = *t;
      v.bytes = static_cast<size_t>(shape_numel(t->static_shape())) * dtype_size(t->dtype);
    }
  }
  // Inputs and constants are never planned; a view of one is not either.
  for (size_t s = 0; s < values.size(); ++s)
    if (values[s].def < 0) values[s].bytes = 0;
  plan_ = plan_memory(values);
  if (plan_.arena_bytes > 0) arena_ = Tensor(DType::UInt8, {static_cast<int64_t>(plan_.arena_bytes)});
}

bool Session::in_arena(const Tensor& t) const {
  if (!arena_.defined() || !t.defined()) return false;
  const auto* p = static_cast<const std::byte*>(t.raw());
  const auto* base = static_cast<const std::byte*>(arena_.raw());
  return p >= base && p < base + plan_.arena_bytes;
}

void Session::choose_kernels(const kernels::AlgoSpec& spec, bool release_packed) {
  kernels::Selector selector(spec, *pool_);
  selector.check_targets(graph_);
  if (std::string p = selector.cache_problem(); !p.empty()) std::fprintf(stderr, "warning: %s\n", p.c_str());
  // Uses of each constant slot not yet prepared, and whether a prepared one reads it at run time.
  std::vector<int> pending(slot_of_.size(), 0);
  std::vector<bool> read(slot_of_.size(), false);
  for (int s : output_slots_) read[static_cast<size_t>(s)] = true;
  for (const Step& st : steps_)
    for (int s : st.in_slots)
      if (s >= 0) ++pending[static_cast<size_t>(s)];
  std::vector<std::string> name_of(slot_of_.size());
  if (release_packed)
    for (auto& [name, s] : slot_of_) name_of[static_cast<size_t>(s)] = name;
  size_t untrimmed = 0;  // bytes released since malloc last gave pages back
  for (Step& st : steps_) {
    ir::Node& n = *graph_.nodes[st.node];
    kernels::Selection sel = selector.select(kernels::view_of(graph_, n, pool_->threads()));
    nlohmann::json& sw = n.meta["software"];
    sw["algorithm"] = sel.algorithm ? sel.algorithm->name : "reference";
    sw["algorithm_source"] = sel.source;
    if (sel.kernel && !sel.kernel->detail().empty()) sw["algorithm_detail"] = sel.kernel->detail();
    if (!sel.measured_ms.empty()) sw["algorithm_ms"] = sel.measured_ms;
    st.kernel = std::move(sel.kernel);
    if (!release_packed) continue;
    for (size_t j = 0; j < st.in_slots.size(); ++j) {
      const int s = st.in_slots[j];
      if (s < 0 || !constant_slots_[static_cast<size_t>(s)].defined()) continue;
      if (!st.kernel || st.kernel->reads_input(j)) read[static_cast<size_t>(s)] = true;
      if (--pending[static_cast<size_t>(s)] == 0 && !read[static_cast<size_t>(s)]) {
        untrimmed += constant_slots_[static_cast<size_t>(s)].nbytes();
        constant_slots_[static_cast<size_t>(s)] = Tensor();
        graph_.initializers.erase(name_of[static_cast<size_t>(s)]);
        ++released_;
      }
    }
    // Freed weights sit in the middle of malloc's heap (glibc raises its mmap threshold as
    // large blocks are freed): give their pages back before the next kernel packs its copy.
    if (untrimmed > (8u << 20)) {
      malloc_trim(0);
      untrimmed = 0;
    }
  }
  if (untrimmed) malloc_trim(0);
  selector.save();
}

Session::~Session() = default;

size_t Session::weight_bytes() const {
  size_t b = 0;
  for (auto& [k, t] : graph_.initializers) b += t.nbytes();
  return b;
}

void Session::check_input(const std::string& name, const Tensor& t) const {
  const ir::TensorType* want = graph_.type_of(name);
  if (!want) return;
  if (want->kind != t.kind())
    fail("input '" + name + "': expected a " + value_kind_name(want->kind) + ", got " + t.describe());
  if (want->dtype != t.dtype())
    fail("input '" + name + "': expected " + dtype_name(want->dtype) + ", got " + dtype_name(t.dtype()));
  if (!want->has_shape || !want->is_tensor()) return;
  bool ok = want->dims.size() == t.shape().size();
  for (size_t i = 0; ok && i < want->dims.size(); ++i)
    if (want->dims[i].is_static() && want->dims[i].value != t.shape()[i]) ok = false;
  if (!ok) fail("input '" + name + "': expected shape " + ir::dims_str(want->dims) + ", got " + shape_str(t.shape()));
}

TensorMap Session::run(const TensorMap& inputs) {
  std::vector<Tensor> slots = constant_slots_;
  LiveBytes live;
  for (auto& [name, t] : inputs) {
    auto it = slot_of_.find(name);
    bool is_input = std::find(graph_.inputs.begin(), graph_.inputs.end(), name) != graph_.inputs.end();
    if (!is_input || it == slot_of_.end()) {
      std::string names;
      for (auto& n : graph_.inputs) names += (names.empty() ? "" : ", ") + n;
      fail("'" + name + "' is not an input of the model (inputs: " + names + ")");
    }
    check_input(name, t);
    slots[it->second] = t;
  }
  for (size_t i = 0; i < graph_.inputs.size(); ++i)
    if (!slots[input_slots_[i]].defined()) fail("missing input '" + graph_.inputs[i] + "'");

  std::vector<const Tensor*> in_ptrs;
  for (size_t si = 0; si < steps_.size(); ++si) {
    const Step& st = steps_[si];
    const ir::Node& n = *graph_.nodes[st.node];
    in_ptrs.clear();
    for (int s : st.in_slots) in_ptrs.push_back(s >= 0 ? &slots[s] : nullptr);
    for (auto* o : observers_) o->before_node(si, n, in_ptrs);
    ops::KernelContext k{n, graph_.opset(n.domain), in_ptrs, {}, pool_.get()};
    k.outputs.resize(n.outputs.size());
    for (size_t j = 0; j < st.out_slots.size(); ++j) {  // planned buffers for the kernel to fill
      const int s = st.out_slots[j];
      if (s < 0 || plan_.offset[static_cast<size_t>(s)] < 0 || (j == 0 && st.def->view)) continue;
      const ir::TensorType& t = slot_type_[static_cast<size_t>(s)];
      k.outputs[j] = arena_.view(static_cast<size_t>(plan_.offset[static_cast<size_t>(s)]), t.dtype, t.static_shape());
    }
    if (st.kernel)
      st.kernel->run(k);
    else
      st.def->run(k);
    for (auto* o : observers_) o->after_node(si, n, in_ptrs, k.outputs);
    for (size_t i = 0; i < st.out_slots.size(); ++i) {
      int s = st.out_slots[i];
      if (s < 0) continue;
      if (!k.outputs[i].defined()) fail_internal(n.where() + ": kernel produced no output " + std::to_string(i));
      // An output inside the arena must be its own planned buffer; anything else there (a
      // kernel that returned a view of an input) is copied out before the arena reuses it.
      if (in_arena(k.outputs[i])) {
        const long long off = plan_.offset[static_cast<size_t>(s)];
        const auto* want = static_cast<const std::byte*>(arena_.raw()) + off;
        if (off < 0 || k.outputs[i].raw() != want) k.outputs[i] = k.outputs[i].clone();
      }
      slots[s] = std::move(k.outputs[i]);
      live.add(slots[s]);
    }
    for (int s : st.free_after) {
      live.remove(slots[s]);
      slots[s] = Tensor();
    }
  }
  peak_bytes_ = live.peak();
  TensorMap out;
  for (size_t i = 0; i < graph_.outputs.size(); ++i) out[graph_.outputs[i]] = slots[output_slots_[i]];
  return out;
}

}  // namespace joule::runtime
