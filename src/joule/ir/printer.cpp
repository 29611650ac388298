#include "joule/ir/printer.h"

#include <algorithm>
#include <sstream>

namespace joule::ir {

namespace {
std::string type_or_q(const Graph& g, const std::string& v) {
  const TensorType* t = g.type_of(v);
  return t ? t->str() : "?";
}
}  // namespace

std::string dot_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r;
}

namespace {
void write_text(std::ostringstream& os, const Graph& g, const std::string& pad);

// The graph attributes of n, each as a nested graph block under the node's line.
void write_bodies(std::ostringstream& os, const Node& n, const std::string& pad) {
  for (auto& [k, v] : n.attrs)
    if (const auto* ref = std::get_if<GraphRef>(&v); ref && *ref) {
      os << pad << "  " << k << ": ";
      write_text(os, **ref, pad + "  ");
    }
}

void write_text(std::ostringstream& os, const Graph& g, const std::string& pad) {
  os << "graph " << (g.name.empty() ? "main" : g.name) << " (";
  for (size_t i = 0; i < g.inputs.size(); ++i)
    os << (i ? ", " : "") << "%" << g.inputs[i] << ": " << type_or_q(g, g.inputs[i]);
  os << ") {\n";
  for (auto& [name, t] : g.initializers) os << pad << "  init %" << name << ": " << t.describe() << "\n";
  for (auto& n : g.nodes) {
    os << pad << "  ";
    for (size_t i = 0; i < n->outputs.size(); ++i) os << (i ? ", " : "") << "%" << n->outputs[i];
    os << " = " << (n->domain.empty() ? "" : n->domain + ".") << n->op_type;
    if (!n->attrs.empty()) {
      os << "[";
      bool first = true;
      for (auto& [k, v] : n->attrs) {
        os << (first ? "" : ", ") << k << "=" << attribute_str(v);
        first = false;
      }
      os << "]";
    }
    os << "(";
    for (size_t i = 0; i < n->inputs.size(); ++i) os << (i ? ", " : "") << (n->inputs[i].empty() ? "" : "%" + n->inputs[i]);
    os << ")  # " << n->name;
    for (auto& o : n->outputs)
      if (!o.empty()) os << " " << type_or_q(g, o);
    os << "\n";
    write_bodies(os, *n, pad + "  ");
  }
  os << pad << "  return ";
  for (size_t i = 0; i < g.outputs.size(); ++i) os << (i ? ", " : "") << "%" << g.outputs[i];
  os << "\n" << pad << "}\n";
}
}  // namespace

std::string to_text(const Graph& g) {
  std::ostringstream os;
  write_text(os, g, "");
  return os.str();
}

namespace {
// Nodes and edges of g with ids prefixed by `prefix` (empty at the top level); each control-flow
// node's bodies as dashed clusters beside it, a dotted edge from the node into each.
void write_dot(std::ostringstream& os, const Graph& g, const std::string& prefix, const std::string& pad,
               const std::function<std::string(const Node&)>& node_attrs, int& clusters) {
  auto id = [&](const std::string& kind, const std::string& name) { return "\"" + dot_escape(prefix + kind + name) + "\""; };
  auto prod = g.producers();
  for (size_t i = 0; i < g.inputs.size(); ++i)
    os << pad << id("in:", g.inputs[i]) << " [shape=ellipse, fillcolor=\"#dff0d8\", label=\"" << dot_escape(g.inputs[i]) << "\\n"
       << dot_escape(type_or_q(g, g.inputs[i])) << "\"];\n";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = *g.nodes[i];
    os << pad << prefix << "n" << i << " [label=\"" << dot_escape(n.op_type) << "\\n" << dot_escape(n.name) << "\""
       << (node_attrs ? ", " + node_attrs(n) : "") << "];\n";
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (auto& in : g.nodes[i]->inputs) {
      if (in.empty() || g.is_initializer(in)) continue;
      auto it = prod.find(in);
      const bool known = it != prod.end() || std::find(g.inputs.begin(), g.inputs.end(), in) != g.inputs.end();
      if (!known) continue;  // a body's read of an outer-scope value: drawn as the owner's input
      std::string src = it != prod.end() ? prefix + "n" + std::to_string(it->second) : id("in:", in);
      const TensorType* t = g.type_of(in);
      os << pad << src << " -> " << prefix << "n" << i << " [label=\"" << dot_escape(t && t->has_shape ? dims_str(t->dims) : "") << "\"];\n";
    }
  }
  for (auto& o : g.outputs) {
    os << pad << id("out:", o) << " [shape=ellipse, fillcolor=\"#fbeee0\", label=\"" << dot_escape(o) << "\"];\n";
    auto it = prod.find(o);
    if (it != prod.end()) os << pad << prefix << "n" << it->second << " -> " << id("out:", o) << ";\n";
    else os << pad << id("in:", o) << " -> " << id("out:", o) << ";\n";
  }
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (auto& [k, v] : g.nodes[i]->attrs) {
      const auto* ref = std::get_if<GraphRef>(&v);
      if (!ref || !*ref) continue;
      const int c = clusters++;
      const std::string inner = "b" + std::to_string(c) + "_";
      os << pad << "subgraph cluster_" << c << " {\n"
         << pad << "  label=\"" << dot_escape(g.nodes[i]->name + " " + k) << "\"; style=dashed;\n";
      write_dot(os, **ref, inner, pad + "  ", node_attrs, clusters);
      os << pad << "}\n";
      if (!(*ref)->nodes.empty())
        os << pad << prefix << "n" << i << " -> " << inner << "n0 [style=dotted, lhead=cluster_" << c << "];\n";
    }
}
}  // namespace

std::string to_dot(const Graph& g, const std::function<std::string(const Node&)>& node_attrs) {
  std::ostringstream os;
  os << "digraph \"" << dot_escape(g.name.empty() ? "joule" : g.name) << "\" {\n"
     << "  rankdir=TB; compound=true;\n  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef3fb\", fontname=\"Helvetica\"];\n"
     << "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  int clusters = 0;
  write_dot(os, g, "", "  ", node_attrs, clusters);
  os << "}\n";
  return os.str();
}

}  // namespace joule::ir
