#include "joule/passes/model_info.h"

#include <map>

#include "joule/passes/annotate_costs.h"
#include "joule/passes/check_support.h"
#include "joule/passes/infer_shapes.h"

namespace joule::passes {

namespace {
// The nodes of a control-flow node's bodies (If branches, Loop/Scan bodies), nested: [{"attribute",
// "graph", "nodes": [{"name", "op"[, "bodies"]}...]}...]; empty for other nodes.
nlohmann::json bodies_of(const ir::Node& n) {
  nlohmann::json r = nlohmann::json::array();
  for (const auto& [attr, a] : n.attrs) {
    const auto* ref = std::get_if<ir::GraphRef>(&a);
    if (!ref || !*ref) continue;
    nlohmann::json nodes = nlohmann::json::array();
    for (const auto& b : (*ref)->nodes) {
      nlohmann::json bj = {{"name", b->name}, {"op", b->op_type}};
      if (nlohmann::json sub = bodies_of(*b); !sub.empty()) bj["bodies"] = std::move(sub);
      nodes.push_back(std::move(bj));
    }
    r.push_back({{"attribute", attr}, {"graph", (*ref)->name}, {"nodes", std::move(nodes)}});
  }
  return r;
}
}  // namespace

nlohmann::json model_info(ir::Graph& g) {
  using nlohmann::json;
  json j;
  j["graph"] = g.name;
  json opsets = json::object();
  for (auto& [d, v] : g.opsets) opsets[d.empty() ? "ai.onnx" : d] = v;
  j["opsets"] = opsets;
  j["producer"] = g.model_props.count("producer") ? g.model_props.at("producer") : "";

  std::vector<std::string> unsupported = find_unsupported(g);
  InferResult inf = infer_shapes(g);
  CostTotals tot = annotate_costs(g);

  auto io = [&](const std::vector<std::string>& names) {
    json a = json::array();
    for (auto& n : names) {
      const ir::TensorType* t = g.type_of(n);
      json v = {{"name", n},
                {"dtype", t ? dtype_name(t->dtype) : "undefined"},
                {"shape", t && t->has_shape ? ir::dims_str(t->dims) : "?"}};
      // A sequence's or optional's dtype and shape are its elements'; "type" says the whole.
      if (t && !t->is_tensor()) v["kind"] = value_kind_name(t->kind), v["type"] = t->str();
      a.push_back(v);
    }
    return a;
  };
  j["inputs"] = io(g.inputs);
  j["outputs"] = io(g.outputs);

  std::map<std::string, json> hist;
  json nodes = json::array();
  for (auto& n : g.nodes) {
    const auto& c = n->meta["common"];
    json& h = hist[n->op_type];
    if (h.is_null()) h = {{"count", 0}, {"macs", 0.0}, {"flops", 0.0}, {"params", 0}};
    h["count"] = h["count"].get<int>() + 1;
    h["params"] = h["params"].get<int64_t>() + c.value("params", int64_t{0});
    if (c.contains("macs")) {
      h["macs"] = h["macs"].get<double>() + c["macs"].get<double>();
      h["flops"] = h["flops"].get<double>() + c["flops"].get<double>();
    }
    json nj = {{"name", n->name}, {"op", n->op_type}, {"inputs", c["inputs"]},
               {"outputs", c["outputs"]}, {"params", c["params"]}};
    if (c.contains("macs")) {
      nj["macs"] = c["macs"];
      nj["flops"] = c["flops"];
      nj["bytes"] = c["bytes"];
    }
    if (json b = bodies_of(*n); !b.empty()) nj["bodies"] = std::move(b);
    nodes.push_back(nj);
  }
  json hj = json::array();
  for (auto& [op, h] : hist) {
    json e = h;
    e["op"] = op;
    hj.push_back(e);
  }
  std::sort(hj.begin(), hj.end(), [](const json& a, const json& b) {
    if (a["count"] != b["count"]) return a["count"].get<int>() > b["count"].get<int>();
    return a["op"].get<std::string>() < b["op"].get<std::string>();
  });
  j["op_histogram"] = hj;
  j["nodes"] = nodes;
  j["num_nodes"] = g.nodes.size();
  j["parameters"] = g.parameter_count();
  int64_t weight_bytes = 0;
  for (auto& [k, t] : g.initializers) weight_bytes += static_cast<int64_t>(t.nbytes());
  j["weight_bytes"] = weight_bytes;
  j["total"] = {{"macs", tot.macs}, {"flops", tot.flops}, {"bytes", tot.bytes},
                {"nodes_without_shapes", tot.nodes_without_shapes}};
  j["unsupported"] = unsupported;
  j["constants_folded"] = inf.constants.size() - g.initializers.size();
  return j;
}

}  // namespace joule::passes
