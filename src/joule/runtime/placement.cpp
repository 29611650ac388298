#include "joule/runtime/placement.h"

#include <map>
#include <set>

#include "joule/cuda/backend.h"

namespace joule::runtime {

namespace {
bool reads_shape_only(const ir::Node& n) { return n.domain.empty() && (n.op_type == "Shape" || n.op_type == "Size"); }
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
  std::set<std::string> used;  // node and value names (Graph::unique_name rescans every call)
  for (auto& n : g.nodes) {
    used.insert(n->name);
    used.insert(n->outputs.begin(), n->outputs.end());
  }
  used.insert(g.inputs.begin(), g.inputs.end());
  for (auto& [k, t] : g.initializers) used.insert(k);
  auto fresh = [&used](const std::string& prefix) {
    std::string c = prefix;
    for (int i = 1; used.count(c); ++i) c = prefix + "_" + std::to_string(i);
    used.insert(c);
    return c;
  };
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

}  // namespace joule::runtime
