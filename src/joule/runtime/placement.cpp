#include "joule/runtime/placement.h"

#include <map>
#include <set>

#include "joule/core/error.h"
#include "joule/cuda/backend.h"

namespace joule::runtime {

namespace {
bool reads_shape_only(const ir::Node& n) { return n.domain.empty() && (n.op_type == "Shape" || n.op_type == "Size"); }

// Names no node or value of the graph has yet (Graph::unique_name rescans the graph every call):
// `prefix`, else prefix_1, prefix_2, ...
class FreshNames {
 public:
  explicit FreshNames(const ir::Graph& g) {
    for (auto& n : g.nodes) {
      used_.insert(n->name);
      used_.insert(n->outputs.begin(), n->outputs.end());
    }
    used_.insert(g.inputs.begin(), g.inputs.end());
    for (auto& [k, t] : g.initializers) used_.insert(k);
  }
  std::string operator()(const std::string& prefix) {
    std::string c = prefix;
    for (int i = 1; used_.count(c); ++i) c = prefix + "_" + std::to_string(i);
    used_.insert(c);
    return c;
  }

 private:
  std::set<std::string> used_;
};
}  // namespace

int node_device(const ir::Node& n) {
  if (!n.meta.contains("device") || !n.meta["device"].is_string()) return -1;
  return cuda::parse_device_syntax(n.meta["device"].get<std::string>());
}

bool is_memcpy(const ir::Node& n) {
  return n.domain == "joule" && (n.op_type == "MemcpyToDevice" || n.op_type == "MemcpyToHost");
}

PlacementReport place_on_device(ir::Graph& g, int device, const SupportFn& support) {
  PlacementReport r;
  const std::string dev = cuda::device_name(device);
  g.sort_topologically();
  FreshNames fresh(g);
  // Where every value lives: graph inputs on the host, constants everywhere (uploaded once).
  std::map<std::string, int> where;
  for (const std::string& in : g.inputs) where[in] = -1;
  std::vector<std::unique_ptr<ir::Node>> out;
  std::map<std::pair<std::string, int>, std::string> copy_of;  // (value, device) -> copy's name
  auto copy_to = [&](const std::string& v, int to) -> std::string {
    auto key = std::make_pair(v, to);
    if (auto it = copy_of.find(key); it != copy_of.end()) return it->second;
    auto n = std::make_unique<ir::Node>();
    n->domain = "joule";
    n->op_type = to >= 0 ? "MemcpyToDevice" : "MemcpyToHost";
    n->name = fresh(std::string(to >= 0 ? "memcpy_to_" + dev : "memcpy_to_host") + "/" + v);
    const std::string name = fresh(v + (to >= 0 ? "@" + dev : "@host"));
    n->inputs = {v};
    n->outputs = {name};
    n->meta["device"] = dev;  // the GPU's stream runs both directions
    if (const ir::TensorType* t = g.type_of(v)) g.types[name] = *t;
    where[name] = to;
    out.push_back(std::move(n));
    ++r.copies;
    return copy_of[key] = name;
  };
  for (auto& np : g.nodes) {
    ir::Node& n = *np;
    kernels::NodeView view = kernels::view_of(g, n, 1);
    view.device = device;  // asking the GPU algorithms whether they would run it there
    DeviceSupport s = support(view);
    const int on = s.reason.empty() ? device : -1;
    n.meta["device"] = cuda::device_name(on);
    if (on < 0) {
      n.meta["device_reason"] = s.reason;
      r.cpu_fallbacks.emplace_back(n.name, s.reason);
      ++r.cpu_nodes;
    } else {
      ++r.gpu_nodes;
    }
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const std::string& v = n.inputs[i];
      if (v.empty() || g.is_initializer(v)) continue;
      auto it = where.find(v);
      const int at = it == where.end() ? -1 : it->second;  // (captured outer values: host)
      const bool host_read = on >= 0 && i < s.host_input.size() && s.host_input[i];
      const int want = host_read ? -1 : on;
      if (at == want || (on < 0 && reads_shape_only(n))) continue;
      n.inputs[i] = copy_to(v, want);
    }
    for (const std::string& o : n.outputs)
      if (!o.empty()) where[o] = on;
    out.push_back(std::move(np));
  }
  // Graph outputs made on the GPU: the producer's value is renamed and copied back under the
  // name the user asked for.
  for (std::string& o : g.outputs) {
    auto it = where.find(o);
    if (it == where.end() || it->second < 0) continue;
    const std::string dev_name = fresh(o + "@" + dev);
    for (auto& n : out) {
      for (auto& x : n->outputs)
        if (x == o) x = dev_name;
      for (auto& x : n->inputs)
        if (x == o) x = dev_name;
    }
    if (auto t = g.types.find(o); t != g.types.end()) g.types[dev_name] = t->second;
    auto n = std::make_unique<ir::Node>();
    n->domain = "joule";
    n->op_type = "MemcpyToHost";
    n->name = fresh("memcpy_to_host/" + o);
    n->inputs = {dev_name};
    n->outputs = {o};
    n->meta["device"] = dev;
    out.push_back(std::move(n));
    ++r.copies;
  }
  g.nodes = std::move(out);
  if (!g.opsets.count("joule")) g.opsets["joule"] = 1;
  return r;
}

int lower_gpu_floats(ir::Graph& g, DType to, const std::vector<std::string>& keep) {
  JOULE_CHECK(to == DType::Float16 || to == DType::BFloat16, "lower_gpu_floats to " + std::string(dtype_name(to)));
  std::set<std::string> kept(keep.begin(), keep.end()), unknown = kept;
  for (auto& n : g.nodes) unknown.erase(n->name);
  if (!unknown.empty()) {
    std::string list;
    for (const std::string& u : unknown) list += (list.empty() ? "" : ", ") + u;
    fail("--gpu-fp32: no node named " + list);
  }
  // A copy to the GPU read only by kept nodes stays float32 (no rounding through half).
  std::map<std::string, bool> read_in_half;
  for (auto& n : g.nodes)
    for (const std::string& v : n->inputs) read_in_half[v] = read_in_half[v] || !kept.count(n->name);
  FreshNames fresh(g);
  int changed = 0;
  std::map<std::string, std::string> twin;  // float32 constant -> its converted copy
  for (auto& np : g.nodes) {
    ir::Node& n = *np;
    if (node_device(n) < 0 || kept.count(n.name)) continue;
    const bool to_host = n.domain == "joule" && n.op_type == "MemcpyToHost";
    if (n.domain == "joule" && n.op_type == "MemcpyToDevice" && !read_in_half[n.outputs[0]]) continue;
    if (!is_memcpy(n)) {
      const std::vector<bool> host = cuda::host_inputs(n);
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const std::string& v = n.inputs[i];
        if (v.empty() || (i < host.size() && host[i])) continue;
        auto it = g.initializers.find(v);
        if (it == g.initializers.end() || it->second.dtype() != DType::Float32) continue;
        auto [t, made] = twin.try_emplace(v);
        if (made) {
          const std::string name = fresh(v + "@" + dtype_name(to));
          g.initializers[name] = it->second.cast(to);
          if (const ir::TensorType* ty = g.type_of(v)) {
            ir::TensorType c = *ty;
            c.dtype = to;
            g.types[name] = c;
          }
          t->second = name;
        }
        n.inputs[i] = t->second;
      }
    }
    if (to_host) continue;
    for (const std::string& o : n.outputs) {
      auto it = g.types.find(o);
      if (o.empty() || it == g.types.end() || it->second.dtype != DType::Float32) continue;
      it->second.dtype = to;
      ++changed;
    }
  }
  if (kept.empty()) return changed;
  // Where a kept node reads a half value, or a half node a kept node's float32 one: a Cast on
  // the GPU before the first such reader, shared by the later ones.
  std::map<std::pair<std::string, DType>, std::string> cast_of;
  std::vector<std::unique_ptr<ir::Node>> out;
  for (auto& np : g.nodes) {
    ir::Node& n = *np;
    if (node_device(n) >= 0 && !is_memcpy(n)) {
      const DType want = kept.count(n.name) ? DType::Float32 : to;
      const std::vector<bool> host = cuda::host_inputs(n);
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const std::string v = n.inputs[i];
        if (v.empty() || (i < host.size() && host[i]) || g.is_initializer(v)) continue;
        auto t = g.types.find(v);
        if (t == g.types.end() || (t->second.dtype != DType::Float32 && t->second.dtype != to) || t->second.dtype == want) continue;
        auto [c, made] = cast_of.try_emplace({v, want});
        if (made) {
          auto cast = std::make_unique<ir::Node>();
          cast->op_type = "Cast";
          cast->name = fresh("cast_to_" + std::string(dtype_name(want)) + "/" + v);
          const std::string value = fresh(v + "@" + dtype_name(want));
          cast->inputs = {v};
          cast->outputs = {value};
          cast->attrs["to"] = static_cast<int64_t>(dtype_to_onnx(want));
          cast->meta["device"] = n.meta["device"];
          cast->meta["gpu_math"] = n.meta.value("gpu_math", std::string("fp32"));
          ir::TensorType ty = t->second;
          ty.dtype = want;
          g.types[value] = ty;
          c->second = value;
          out.push_back(std::move(cast));
        }
        n.inputs[i] = c->second;
      }
    }
    out.push_back(std::move(np));
  }
  g.nodes = std::move(out);
  return changed;
}

}  // namespace joule::runtime
