#include "joule/ir/printer.h"

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

std::string to_text(const Graph& g) {
  std::ostringstream os;
  os << "graph " << (g.name.empty() ? "main" : g.name) << " (";
  for (size_t i = 0; i < g.inputs.size(); ++i)
    os << (i ? ", " : "") << "%" << g.inputs[i] << ": " << type_or_q(g, g.inputs[i]);
  os << ") {\n";
  for (auto& [name, t] : g.initializers) os << "  init %" << name << ": " << t.describe() << "\n";
  for (auto& n : g.nodes) {
    os << "  ";
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
  }
  os << "  return ";
  for (size_t i = 0; i < g.outputs.size(); ++i) os << (i ? ", " : "") << "%" << g.outputs[i];
  os << "\n}\n";
  return os.str();
}

std::string to_dot(const Graph& g, const std::function<std::string(const Node&)>& node_attrs) {
  std::ostringstream os;
  os << "digraph \"" << dot_escape(g.name.empty() ? "joule" : g.name) << "\" {\n"
     << "  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef3fb\", fontname=\"Helvetica\"];\n"
     << "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  auto prod = g.producers();
  for (size_t i = 0; i < g.inputs.size(); ++i)
    os << "  \"in:" << dot_escape(g.inputs[i]) << "\" [shape=ellipse, fillcolor=\"#dff0d8\", label=\""
       << dot_escape(g.inputs[i]) << "\\n" << dot_escape(type_or_q(g, g.inputs[i])) << "\"];\n";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = *g.nodes[i];
    os << "  n" << i << " [label=\"" << dot_escape(n.op_type) << "\\n" << dot_escape(n.name) << "\""
       << (node_attrs ? ", " + node_attrs(n) : "") << "];\n";
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (auto& in : g.nodes[i]->inputs) {
      if (in.empty() || g.is_initializer(in)) continue;
      auto it = prod.find(in);
      std::string src = it != prod.end() ? "n" + std::to_string(it->second) : "\"in:" + dot_escape(in) + "\"";
      const TensorType* t = g.type_of(in);
      os << "  " << src << " -> n" << i << " [label=\"" << dot_escape(t && t->has_shape ? dims_str(t->dims) : "") << "\"];\n";
    }
  }
  for (auto& o : g.outputs) {
    os << "  \"out:" << dot_escape(o) << "\" [shape=ellipse, fillcolor=\"#fbeee0\", label=\"" << dot_escape(o) << "\"];\n";
    auto it = prod.find(o);
    if (it != prod.end()) os << "  n" << it->second << " -> \"out:" << dot_escape(o) << "\";\n";
    else os << "  \"in:" << dot_escape(o) << "\" -> \"out:" << dot_escape(o) << "\";\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace joule::ir
