// Constant: value (tensor), value_float(s), value_int(s); sparse/string values unsupported.
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

Tensor constant_value(const ir::Node& node) {
  for (const char* k : {"sparse_value", "value_string", "value_strings"})
    if (node.has_attr(k)) fail_unsupported(node.where() + ": attribute '" + k + "' is not supported");
  int found = 0;
  Tensor t;
  for (const auto& [k, a] : node.attrs) {
    if (k == "value") {
      const Tensor* v = std::get_if<Tensor>(&a);
      if (!v) fail(node.where() + ": attribute 'value' must be a tensor");
      t = *v;
    } else if (k == "value_float") {
      t = Tensor::scalar<float>(node.attr_float(k, 0.f));
    } else if (k == "value_floats") {
      auto v = node.attr_floats(k);
      t = Tensor::from_vector(v, {static_cast<int64_t>(v.size())});
    } else if (k == "value_int") {
      t = Tensor::scalar<int64_t>(node.attr_int(k, 0));
    } else if (k == "value_ints") {
      auto v = node.attr_ints(k);
      t = Tensor::from_vector(v, {static_cast<int64_t>(v.size())});
    } else {
      continue;
    }
    ++found;
  }
  if (found != 1) fail(node.where() + ": exactly one value attribute is required");
  return t;
}

void infer(InferContext& c) {
  Tensor t = constant_value(c.node);
  c.out(0) = ir::TensorType::of(t.dtype(), t.shape());
  c.output_values[0] = t;
}

void run(KernelContext& c) { c.outputs[0] = constant_value(c.node); }

std::string check(const ir::Node& node, int64_t) {
  for (const char* k : {"sparse_value", "value_string", "value_strings"})
    if (node.has_attr(k)) return std::string("attribute '") + k + "' is not supported";
  return "";
}

}  // namespace

extern const OpDef kOpConstant;
const OpDef kOpConstant{"Constant", "", 0, 0, infer, run, data_movement_cost, check};

}  // namespace joule::ops
