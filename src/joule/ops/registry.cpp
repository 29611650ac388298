// The table of every op joule implements. Each op file defines `const OpDef kOp<Name>`;
// adding an op = one file + one line in the list file of its family.
#include <map>
#include <utility>

#include "joule/ops/util.h"

namespace joule::ops {

#define JOULE_OP(name) extern const OpDef kOp##name;
#include "joule/ops/list_elementwise.inc"
#include "joule/ops/list_nn.inc"
#include "joule/ops/list_tensor.inc"
#include "joule/ops/list_train.inc"
#undef JOULE_OP

const std::vector<const OpDef*>& all_ops() {
  static const std::vector<const OpDef*> ops = {
#define JOULE_OP(name) &kOp##name,
#include "joule/ops/list_elementwise.inc"
#include "joule/ops/list_nn.inc"
#include "joule/ops/list_tensor.inc"
#include "joule/ops/list_train.inc"
#undef JOULE_OP
  };
  return ops;
}

const OpDef* find_op(const std::string& domain, const std::string& type) {
  static const auto index = [] {
    std::map<std::pair<std::string, std::string>, const OpDef*> m;
    for (const OpDef* d : all_ops()) m[{d->domain, d->type}] = d;
    return m;
  }();
  const std::string dom = domain == "ai.onnx" ? "" : domain;
  auto it = index.find({dom, type});
  return it == index.end() ? nullptr : it->second;
}

Cost node_cost(const OpDef& def, const CostContext& c) {
  if (def.cost) return def.cost(c);
  Cost r;
  for (const Shape& s : c.out) r.flops += static_cast<double>(shape_numel(s));
  r.bytes = io_bytes(c);
  return r;
}

}  // namespace joule::ops
