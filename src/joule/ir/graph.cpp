#include "joule/ir/graph.h"

#include <algorithm>
#include <functional>
#include <sstream>
#include <unordered_set>

namespace joule::ir {

std::string dims_str(const std::vector<Dim>& dims) {
  std::string r = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) r += ",";
    r += dims[i].is_static() ? std::to_string(dims[i].value)
                             : (dims[i].param.empty() ? std::string("?") : dims[i].param);
  }
  return r + "]";
}

TensorType TensorType::of(DType t, const Shape& s) {
  TensorType r;
  r.dtype = t;
  r.has_shape = true;
  for (int64_t d : s) r.dims.push_back(Dim{d, ""});
  return r;
}

TensorType TensorType::of_value(const Tensor& v) {
  if (v.is_tensor()) return of(v.dtype(), v.shape());
  TensorType r;
  r.dtype = v.dtype();
  r.kind = v.kind();
  const Tensor* first = v.items().empty() ? nullptr : &v.items()[0];
  if (v.kind() == ValueKind::Optional && first) {
    r.held = first->kind();
    if (!first->is_tensor()) first = first->items().empty() ? nullptr : &first->items()[0];
  }
  if (!first) return r;
  const std::vector<Tensor>& items = v.kind() == ValueKind::Optional && r.held == ValueKind::Sequence ? v.items()[0].items() : v.items();
  r.has_shape = true;
  r.dims = of(first->dtype(), first->shape()).dims;
  for (const Tensor& t : items)
    if (t.rank() != static_cast<int>(r.dims.size())) {
      r.has_shape = false;
      r.dims.clear();
      break;
    } else {
      for (size_t i = 0; i < r.dims.size(); ++i)
        if (r.dims[i].value != t.shape()[i]) r.dims[i] = Dim{};
    }
  return r;
}

TensorType TensorType::with_kind(ValueKind k, ValueKind held_kind) const {
  TensorType r = *this;
  r.kind = k;
  r.held = k == ValueKind::Optional ? held_kind : ValueKind::Tensor;
  return r;
}

bool TensorType::is_static() const {
  if (!has_shape || kind != ValueKind::Tensor) return false;
  return std::all_of(dims.begin(), dims.end(), [](const Dim& d) { return d.is_static(); });
}

Shape TensorType::static_shape() const {
  if (!is_static()) fail_internal("static_shape() on non-static type " + str());
  Shape s;
  for (auto& d : dims) s.push_back(d.value);
  return s;
}

std::string TensorType::str() const {
  std::string t = std::string(dtype_name(dtype)) + (has_shape ? dims_str(dims) : std::string("[?]"));
  if (kind == ValueKind::Sequence) return "seq(" + t + ")";
  if (kind == ValueKind::Optional) return "optional(" + (held == ValueKind::Sequence ? "seq(" + t + ")" : t) + ")";
  return t;
}

int64_t Node::attr_int(const std::string& k, int64_t def) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return def;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  fail(where() + ": attribute '" + k + "' must be an int");
}

float Node::attr_float(const std::string& k, float def) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return def;
  if (auto* v = std::get_if<float>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return static_cast<float>(*v);
  fail(where() + ": attribute '" + k + "' must be a float");
}

std::string Node::attr_string(const std::string& k, const std::string& def) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return def;
  if (auto* v = std::get_if<std::string>(&it->second)) return *v;
  fail(where() + ": attribute '" + k + "' must be a string");
}

std::vector<int64_t> Node::attr_ints(const std::string& k, const std::vector<int64_t>& def) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return def;
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return {*v};
  fail(where() + ": attribute '" + k + "' must be a list of ints");
}

std::vector<float> Node::attr_floats(const std::string& k, const std::vector<float>& def) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return def;
  if (auto* v = std::get_if<std::vector<float>>(&it->second)) return *v;
  if (auto* v = std::get_if<float>(&it->second)) return {*v};
  fail(where() + ": attribute '" + k + "' must be a list of floats");
}

const Tensor* Node::attr_tensor(const std::string& k) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return nullptr;
  if (auto* v = std::get_if<Tensor>(&it->second)) return v;
  fail(where() + ": attribute '" + k + "' must be a tensor");
}

size_t Node::input_count() const {
  size_t n = inputs.size();
  while (n > 0 && inputs[n - 1].empty()) --n;
  return n;
}

std::string Node::where() const {
  return "node '" + name + "' (" + (domain.empty() ? "" : domain + ".") + op_type + ")";
}

std::vector<std::string> Node::attr_strings(const std::string& k) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return {};
  if (auto* v = std::get_if<std::vector<std::string>>(&it->second)) return *v;
  fail(where() + ": attribute '" + k + "' must be a list of strings");
}

const Graph& Node::attr_graph(const std::string& k) const {
  auto it = attrs.find(k);
  if (it == attrs.end() || !std::holds_alternative<GraphRef>(it->second) || !std::get<GraphRef>(it->second))
    fail(where() + ": graph attribute '" + k + "' is missing");
  return *std::get<GraphRef>(it->second);
}

std::string attribute_str(const Attribute& a) {
  return std::visit(
      [](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        std::ostringstream os;
        if constexpr (std::is_same_v<V, int64_t> || std::is_same_v<V, float>) {
          os << v;
        } else if constexpr (std::is_same_v<V, std::string>) {
          os << '"' << v << '"';
        } else if constexpr (std::is_same_v<V, Tensor>) {
          os << "tensor " << v.describe();
        } else if constexpr (std::is_same_v<V, GraphRef>) {
          os << "graph '" << (v ? v->name : "") << "' (" << (v ? v->nodes.size() : 0) << " nodes)";
        } else if constexpr (std::is_same_v<V, TensorType>) {
          os << "type " << v.str();
        } else {
          os << "[";
          for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
          os << "]";
        }
        return os.str();
      },
      a);
}

Graph::Graph(const Graph& o)
    : name(o.name),
      inputs(o.inputs),
      outputs(o.outputs),
      initializers(o.initializers),
      types(o.types),
      opsets(o.opsets),
      model_props(o.model_props) {
  for (auto& n : o.nodes) nodes.push_back(std::make_unique<Node>(*n));
}

Graph& Graph::operator=(const Graph& o) {
  if (this != &o) {
    Graph tmp(o);
    *this = std::move(tmp);
  }
  return *this;
}

Node& Graph::add_node(Node n) {
  nodes.push_back(std::make_unique<Node>(std::move(n)));
  return *nodes.back();
}

int64_t Graph::opset(const std::string& domain) const {
  auto it = opsets.find(domain);
  return it == opsets.end() ? 0 : it->second;
}

const TensorType* Graph::type_of(const std::string& value) const {
  auto it = types.find(value);
  return it == types.end() ? nullptr : &it->second;
}

std::unordered_map<std::string, size_t> Graph::producers() const {
  std::unordered_map<std::string, size_t> p;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (auto& o : nodes[i]->outputs)
      if (!o.empty()) p[o] = i;
  return p;
}

std::unordered_map<std::string, std::vector<size_t>> Graph::consumers() const {
  std::unordered_map<std::string, std::vector<size_t>> c;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (auto& in : nodes[i]->inputs)
      if (!in.empty()) c[in].push_back(i);
  return c;
}

std::vector<size_t> Graph::topo_order() const {
  auto prod = producers();
  std::vector<int> state(nodes.size(), 0);  // 0 new, 1 on stack, 2 done
  std::vector<size_t> order;
  order.reserve(nodes.size());
  // Iterative DFS so deep graphs do not overflow the stack.
  for (size_t root = 0; root < nodes.size(); ++root) {
    if (state[root]) continue;
    std::vector<std::pair<size_t, size_t>> stack{{root, 0}};
    state[root] = 1;
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      const auto& ins = nodes[n]->inputs;
      if (next < ins.size()) {
        const std::string& v = ins[next++];
        if (v.empty()) continue;
        auto it = prod.find(v);
        if (it == prod.end()) continue;
        size_t p = it->second;
        if (state[p] == 1) fail("graph has a cycle through " + nodes[p]->where());
        if (state[p] == 0) {
          state[p] = 1;
          stack.push_back({p, 0});
        }
      } else {
        state[n] = 2;
        order.push_back(n);
        stack.pop_back();
      }
    }
  }
  return order;
}

void Graph::sort_topologically() {
  auto order = topo_order();
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(nodes.size());
  for (size_t i : order) sorted.push_back(std::move(nodes[i]));
  nodes = std::move(sorted);
}

size_t Graph::remove_dead_nodes() {
  std::unordered_set<std::string> live(outputs.begin(), outputs.end());
  std::vector<bool> keep(nodes.size(), false);
  auto order = topo_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& n = *nodes[*it];
    bool used = std::any_of(n.outputs.begin(), n.outputs.end(),
                            [&](const std::string& o) { return live.count(o) != 0; });
    if (!used) continue;
    keep[*it] = true;
    for (auto& in : n.inputs)
      if (!in.empty()) live.insert(in);
  }
  size_t removed = 0;
  std::vector<std::unique_ptr<Node>> kept;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (keep[i]) kept.push_back(std::move(nodes[i]));
    else ++removed;
  }
  nodes = std::move(kept);
  for (auto it = initializers.begin(); it != initializers.end();) {
    if (!live.count(it->first)) it = initializers.erase(it);
    else ++it;
  }
  return removed;
}

std::string Graph::unique_name(const std::string& prefix) const {
  std::unordered_set<std::string> used;
  for (auto& n : nodes) {
    used.insert(n->name);
    for (auto& o : n->outputs) used.insert(o);
  }
  for (auto& i : inputs) used.insert(i);
  for (auto& [k, v] : initializers) used.insert(k);
  if (!used.count(prefix)) return prefix;
  for (int i = 1;; ++i) {
    std::string c = prefix + "_" + std::to_string(i);
    if (!used.count(c)) return c;
  }
}

int64_t Graph::parameter_count() const {
  int64_t n = 0;
  for (auto& [k, t] : initializers) n += t.numel();
  return n;
}

}  // namespace joule::ir
