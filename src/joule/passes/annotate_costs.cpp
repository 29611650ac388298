#include "joule/passes/annotate_costs.h"

#include "joule/ops/op.h"

namespace joule::passes {

CostTotals annotate_costs(ir::Graph& g) {
  CostTotals tot;
  for (auto& np : g.nodes) {
    ir::Node& n = *np;
    auto& common = n.meta["common"];
    common["op"] = n.op_type;
    const ops::OpDef* def = ops::find_op(n.domain, n.op_type);
    ops::CostContext c{n, {}, {}, {}, {}};
    bool known = def != nullptr;
    nlohmann::json in_shapes = nlohmann::json::array(), out_shapes = nlohmann::json::array();
    int64_t params = 0;
    auto add = [&](const std::string& v, std::vector<Shape>& shapes, std::vector<DType>& types,
                   nlohmann::json& js) {
      const ir::TensorType* t = v.empty() ? nullptr : g.type_of(v);
      if (!t || !t->is_static()) {
        if (!v.empty()) known = false;
        shapes.push_back({});
        types.push_back(t ? t->dtype : DType::Undefined);
        js.push_back(t ? t->str() : "?");
        return;
      }
      shapes.push_back(t->static_shape());
      types.push_back(t->dtype);
      js.push_back(t->str());
    };
    for (auto& v : n.inputs) {
      add(v, c.in, c.in_types, in_shapes);
      if (g.is_initializer(v)) params += g.initializers.at(v).numel();
    }
    for (auto& v : n.outputs) add(v, c.out, c.out_types, out_shapes);
    common["inputs"] = in_shapes;
    common["outputs"] = out_shapes;
    common["params"] = params;
    if (!known) {
      ++tot.nodes_without_shapes;
      common.erase("macs");
      common.erase("flops");
      common.erase("bytes");
      continue;
    }
    ops::Cost cost = ops::node_cost(*def, c);
    common["macs"] = cost.macs;
    common["flops"] = cost.flops;
    common["bytes"] = cost.bytes;
    tot.macs += cost.macs;
    tot.flops += cost.flops;
    tot.bytes += cost.bytes;
  }
  return tot;
}

}  // namespace joule::passes
