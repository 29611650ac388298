#include "joule/runtime/session.h"

#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <unordered_map>

#include "joule/cuda/backend.h"
#include "joule/ops/op.h"
#include "joule/passes/check_support.h"
#include "joule/passes/infer_shapes.h"
#include "joule/runtime/bodies.h"
#include "joule/runtime/placement.h"

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
  device_ = options.device;
  plan_only_ = options.plan_only;
  if (device_ < 0 && !options.gpu_fp32.empty()) fail("--gpu-fp32 names GPU nodes: it needs --device cuda");
  if (device_ >= 0) {
    const std::string& math = options.gpu_math;
    if (math != "fp32" && math != "tf32" && math != "fp16" && math != "bf16")
      fail("--gpu-math " + math + ": expected fp32, tf32, fp16 or bf16");
    const std::set<std::string> kept(options.gpu_fp32.begin(), options.gpu_fp32.end());
    for (auto& n : graph_.nodes) n->meta["gpu_math"] = kept.count(n->name) ? "fp32" : math;  // kept: planned as float32
    cuda::parse_device(cuda::device_name(device_));  // refuses when no such GPU is usable
    PlacementReport r = place_on_device(graph_, device_, [](const kernels::NodeView& v) {
      cuda::Support s = cuda::support(v);
      return DeviceSupport{s.reason, s.host_input};
    });
    for (auto& n : graph_.nodes) {
      if (node_device(*n) < 0)
        n->meta.erase("gpu_math");
      else if (!n->meta.contains("gpu_math"))
        n->meta["gpu_math"] = math;  // the copies placement made
    }
    if (math == "fp16" || math == "bf16")
      lower_gpu_floats(graph_, math == "fp16" ? DType::Float16 : DType::BFloat16, options.gpu_fp32);
    else if (!options.gpu_fp32.empty())
      fail("--gpu-fp32 keeps nodes in float32 under --gpu-math fp16 or bf16, not " + math);
    gpu_nodes_ = r.gpu_nodes;
    copy_nodes_ = r.copies;
  }
  // More threads than the cores this process may run on only contend: clamped, said once.
  const int cores = ThreadPool::default_threads();
  int threads = options.threads > 0 ? options.threads : cores;
  if (threads > cores) {
    static bool warned = false;
    if (!warned) std::fprintf(stderr, "warning: %d threads asked for, but this process may use %d cores: running %d\n", threads, cores, cores);
    warned = true;
    threads = cores;
  }
  pool_ = std::make_unique<ThreadPool>(threads);

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
    Step st{idx, ops::find_op(n.domain, n.op_type), nullptr, {}, {}, {}, node_device(n), {}, nullptr};
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
    if (has_bodies(n)) {
      SessionOptions body_options = options;
      body_options.threads = threads;
      st.bodies = std::make_shared<const Bodies>(n, std::move(body_options));
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
  slot_device_.assign(slot_of_.size(), -1);
  for (const Step& st : steps_) {
    const bool to_host = is_memcpy(*graph_.nodes[st.node]) && graph_.nodes[st.node]->op_type == "MemcpyToHost";
    for (int s : st.out_slots)
      if (s >= 0) slot_device_[static_cast<size_t>(s)] = to_host ? -1 : st.device;
  }
  choose_kernels(options.algo, options.release_packed_constants);
  plan_activations(last);
  const char* env = std::getenv("JOULE_CUDA_GRAPHS");  // 0: node by node (for A/B timings)
  find_segments(options.cuda_graphs && !(env && std::string(env) == "0"));
}

void Session::find_segments(bool enabled) {
  if (device_ < 0 || !enabled) return;
  // A step can be replayed from a graph when it runs on the GPU, copies nothing between host
  // and GPU, and every output it makes is a planned GPU buffer or a view of its input (fixed
  // addresses from run to run).
  auto replayable = [&](const Step& st) {
    if (st.device < 0 || is_memcpy(*graph_.nodes[st.node]) || !st.kernel) return false;
    for (size_t j = 0; j < st.out_slots.size(); ++j) {
      const int s = st.out_slots[j];
      if (s < 0) continue;
      if (slot_device(s) < 0 || device_plan_.offset[static_cast<size_t>(s)] < 0) return false;
    }
    return true;
  };
  for (size_t i = 0; i < steps_.size();) {
    if (!replayable(steps_[i])) {
      ++i;
      continue;
    }
    size_t e = i;
    while (e < steps_.size() && replayable(steps_[e])) ++e;
    if (e - i >= 2) {
      Segment seg;
      seg.begin = i;
      seg.end = e;
      segments_.push_back(std::move(seg));
    }
    i = e;
  }
}

std::vector<std::string> Session::cuda_graph_report() const {
  std::vector<std::string> r;
  for (const Segment& g : segments_)
    r.push_back("steps " + std::to_string(g.begin) + "-" + std::to_string(g.end - 1) + ": " +
                (g.failed ? "run node by node (" + g.why + ")"
                 : g.graph && g.graph->ready() ? "replayed as a CUDA graph"
                                                : "captured at the second run"));
  return r;
}

int Session::slot_device(int slot) const { return slot_device_[static_cast<size_t>(slot)]; }

void Session::upload_constants(Step& st) {
  // The constants a GPU node reads in GPU memory, copied there once (shared between nodes).
  if (st.device < 0 || is_memcpy(*graph_.nodes[st.node])) return;
  if (device_constants_.empty()) device_constants_.resize(slot_of_.size());
  const std::vector<bool> host = cuda::host_inputs(*graph_.nodes[st.node]);
  st.device_constant.assign(st.in_slots.size(), false);
  for (size_t j = 0; j < st.in_slots.size(); ++j) {
    const int s = st.in_slots[j];
    if (s < 0 || !constant_slots_[static_cast<size_t>(s)].defined()) continue;
    if (j < host.size() && host[j]) continue;
    Tensor& d = device_constants_[static_cast<size_t>(s)];
    if (!d.defined()) d = cuda::upload(constant_slots_[static_cast<size_t>(s)], st.device);
    st.device_constant[j] = true;
  }
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
  // Inputs and constants are never planned; a view of one is not either. Nor is a value that
  // an op taking sequences or optionals reads (SequenceInsert, Optional, Loop, ...): the value
  // it returns may hold that tensor past its last use here.
  for (size_t s = 0; s < values.size(); ++s)
    if (values[s].def < 0) values[s].bytes = 0;
  for (const Step& st : steps_)
    if (st.def && st.def->any_value)
      for (int s : st.in_slots)
        if (s >= 0) values[static_cast<size_t>(s)].bytes = 0;
  // A host kernel that computes in place over an input this step reads for the last time (and
  // in no other input position) may write its output there.
  for (size_t i = 0; i < steps_.size(); ++i) {
    Step& st = steps_[i];
    st.overwrites_input = -1;
    const int j = st.kernel && st.device < 0 ? st.kernel->may_overwrite_input() : -1;
    if (j < 0 || static_cast<size_t>(j) >= st.in_slots.size() || st.out_slots.empty()) continue;
    const int in = st.in_slots[static_cast<size_t>(j)], out = st.out_slots[0];
    if (in < 0 || out < 0 || last[static_cast<size_t>(in)] != static_cast<int>(i) ||
        std::count(st.in_slots.begin(), st.in_slots.end(), in) != 1 || slot_device_[static_cast<size_t>(in)] >= 0)
      continue;
    values[static_cast<size_t>(out)].reuse_of = in;
    st.overwrites_input = j;  // kept below if the plan grants it
  }
  // Host and GPU values in arenas of their own.
  std::vector<PlannedValue> on_gpu = values;
  for (size_t s = 0; s < values.size(); ++s) (slot_device_[s] < 0 ? on_gpu[s] : values[s]).bytes = 0;
  plan_ = plan_memory(values);
  for (Step& st : steps_) {
    if (st.overwrites_input < 0) continue;
    const long long off = plan_.offset[static_cast<size_t>(st.out_slots[0])];
    if (off < 0 || off != plan_.offset[static_cast<size_t>(st.in_slots[static_cast<size_t>(st.overwrites_input)])])
      st.overwrites_input = -1;
  }
  if (plan_only_) return;
  if (plan_.arena_bytes > 0) arena_ = Tensor(DType::UInt8, {static_cast<int64_t>(plan_.arena_bytes)});
  if (device_ < 0) return;
  device_plan_ = plan_memory(on_gpu, 256);
  if (device_plan_.arena_bytes > 0)
    device_arena_ = cuda::empty(DType::UInt8, {static_cast<int64_t>(device_plan_.arena_bytes)}, device_);
}

bool Session::in_arena(const Tensor& t) const {
  const Tensor& arena = t.on_host() ? arena_ : device_arena_;
  if (!arena.defined() || !t.defined()) return false;
  const auto* p = static_cast<const std::byte*>(t.raw());
  const auto* base = static_cast<const std::byte*>(arena.raw());
  return p >= base && p < base + (t.on_host() ? plan_ : device_plan_).arena_bytes;
}

void Session::choose_kernels(const kernels::AlgoSpec& spec, bool release_packed) {
  kernels::Selector selector(spec, *pool_);
  selector.set_plan_only(plan_only_);
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
    upload_constants(st);
    if (!release_packed) continue;
    for (size_t j = 0; j < st.in_slots.size(); ++j) {
      const int s = st.in_slots[j];
      if (s < 0 || !constant_slots_[static_cast<size_t>(s)].defined()) continue;
      const bool on_gpu = j < st.device_constant.size() && st.device_constant[j];  // reads its GPU copy
      if (!on_gpu && (!st.kernel || st.kernel->reads_input(j))) read[static_cast<size_t>(s)] = true;
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

void Session::replay_step(size_t i, const std::vector<const Tensor*>& inputs) {
  const Step& st = steps_.at(i);
  const ir::Node& n = *graph_.nodes[st.node];
  ops::KernelContext k{n, graph_.opset(n.domain), inputs, {}, pool_.get(), st.bodies.get()};
  k.outputs.resize(n.outputs.size());
  if (st.kernel)
    st.kernel->run(k);
  else
    st.def->run(k);
  if (st.device >= 0) cuda::synchronize(st.device);
}

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
  if (plan_only_) fail_internal("this session is a plan only (SessionOptions::plan_only): it does not run");
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
  std::unique_ptr<cuda::StepTimer> timer;
  if (device_ >= 0 && !observers_.empty()) {
    timer = std::make_unique<cuda::StepTimer>(device_);
    timer->resize(steps_.size());
  }
  // An observer that looks at the inputs after a node gets an input the node overwrote (computed
  // in place) as it was: a copy, made only when one does.
  const bool keep_overwritten =
      std::any_of(observers_.begin(), observers_.end(), [](const Observer* o) { return o->reads_inputs_after(); });
  auto run_step = [&](size_t si) {
    const Step& st = steps_[si];
    const ir::Node& n = *graph_.nodes[st.node];
    in_ptrs.clear();
    for (size_t j = 0; j < st.in_slots.size(); ++j) {
      const int s = st.in_slots[j];
      const bool dev = j < st.device_constant.size() && st.device_constant[j];
      in_ptrs.push_back(s < 0 ? nullptr : dev ? &device_constants_[static_cast<size_t>(s)] : &slots[s]);
    }
    for (auto* o : observers_) o->before_node(si, n, in_ptrs);
    ops::KernelContext k{n, graph_.opset(n.domain), in_ptrs, {}, pool_.get(), st.bodies.get()};
    if (st.bodies) st.bodies->attach(observers_.empty() ? nullptr : &observers_, si);
    k.outputs.resize(n.outputs.size());
    for (size_t j = 0; j < st.out_slots.size(); ++j) {  // planned buffers for the kernel to fill
      const int s = st.out_slots[j];
      if (s < 0 || (j == 0 && st.def->view)) continue;
      const bool dev = slot_device(s) >= 0;
      const long long off = (dev ? device_plan_ : plan_).offset[static_cast<size_t>(s)];
      if (off < 0) continue;
      const ir::TensorType& t = slot_type_[static_cast<size_t>(s)];
      k.outputs[j] = (dev ? device_arena_ : arena_).view(static_cast<size_t>(off), t.dtype, t.static_shape());
    }
    Tensor overwritten;
    if (st.overwrites_input >= 0 && keep_overwritten)
      overwritten = in_ptrs[static_cast<size_t>(st.overwrites_input)]->clone();
    if (timer && st.device >= 0) timer->start(si);
    if (st.kernel)
      st.kernel->run(k);
    else
      st.def->run(k);
    if (timer && st.device >= 0) timer->stop(si);
    if (overwritten.defined()) in_ptrs[static_cast<size_t>(st.overwrites_input)] = &overwritten;
    for (auto* o : observers_) o->after_node(si, n, in_ptrs, k.outputs);
    return std::move(k.outputs);
  };
  // Stores step si's outputs in their slots and frees what it read last.
  auto keep_outputs = [&](size_t si, std::vector<Tensor> outputs) {
    const Step& st = steps_[si];
    const ir::Node& n = *graph_.nodes[st.node];
    for (size_t i = 0; i < st.out_slots.size(); ++i) {
      int s = st.out_slots[i];
      if (s < 0) continue;
      if (!outputs[i].defined()) fail_internal(n.where() + ": kernel produced no output " + std::to_string(i));
      // An output inside the arena must be its own planned buffer; anything else there (a
      // kernel that returned a view of an input) is copied out before the arena reuses it.
      if (in_arena(outputs[i])) {
        const bool host = outputs[i].on_host();
        const long long off = (host ? plan_ : device_plan_).offset[static_cast<size_t>(s)];
        const auto* want = static_cast<const std::byte*>((host ? arena_ : device_arena_).raw()) + off;
        if (off < 0 || outputs[i].raw() != want) outputs[i] = host ? outputs[i].clone() : cuda::copy(outputs[i]);
      }
      slots[s] = std::move(outputs[i]);
      live.add(slots[s]);
    }
    for (int s : st.free_after) {
      live.remove(slots[s]);
      slots[s] = Tensor();
    }
  };
  size_t next_segment = 0;
  for (size_t si = 0; si < steps_.size(); ++si) {
    while (next_segment < segments_.size() && segments_[next_segment].begin < si) ++next_segment;
    Segment* seg = next_segment < segments_.size() && segments_[next_segment].begin == si ? &segments_[next_segment] : nullptr;
    if (!seg || seg->failed || !observers_.empty() || seg->eager_runs == 0) {
      if (seg && observers_.empty()) ++seg->eager_runs;  // the first run allocates and warms up
      keep_outputs(si, run_step(si));
      continue;
    }
    // A run of GPU steps as one CUDA graph: captured at the second run, then replayed.
    if (!seg->graph) {
      auto g = std::make_shared<cuda::CapturedGraph>(device_);
      std::vector<std::vector<Tensor>> outs;
      std::vector<Tensor> saved(slots);  // the capture executes nothing: on failure, run again
      bool ok = true;
      g->begin_capture();
      try {
        for (size_t i = seg->begin; i < seg->end; ++i) {
          outs.push_back(run_step(i));
          std::vector<Tensor> copy = outs.back();
          keep_outputs(i, std::move(copy));
        }
      } catch (const Error& e) {
        ok = false;
        g->why = e.what();
      }
      if (!g->end_capture() || !ok) {
        seg->failed = true;
        seg->why = g->why;
        slots = std::move(saved);
        for (size_t i = seg->begin; i < seg->end; ++i) keep_outputs(i, run_step(i));
        si = seg->end - 1;
        continue;
      }
      seg->graph = std::move(g);
      seg->outputs = std::move(outs);
      seg->graph->launch();
      si = seg->end - 1;
      continue;
    }
    seg->graph->launch();
    for (size_t i = seg->begin; i < seg->end; ++i) keep_outputs(i, seg->outputs[i - seg->begin]);
    si = seg->end - 1;
  }
  peak_bytes_ = live.peak();
  if (timer) device_ms_ = timer->read();
  TensorMap out;
  for (size_t i = 0; i < graph_.outputs.size(); ++i) out[graph_.outputs[i]] = slots[output_slots_[i]];
  return out;
}

}  // namespace joule::runtime
