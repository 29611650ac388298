// The optional ops of ONNX (opset 15, widened in 18): Optional wraps its input, or, without one,
// is the empty optional of its `type` attribute; OptionalHasElement says whether a value is
// there (opset 18: a plain tensor or sequence has one, an absent input has none);
// OptionalGetElement unwraps (an error on an empty optional; opset 18: a plain value passes).
#include "joule/ops/sequence_util.h"
#include "joule/ops/util.h"

namespace joule::ops {
namespace {

const ir::TensorType& type_attr(const ir::Node& n) {
  auto it = n.attrs.find("type");
  const auto* t = it == n.attrs.end() ? nullptr : std::get_if<ir::TensorType>(&it->second);
  if (!t) fail(n.where() + ": without an input, the type attribute is required");
  return *t;
}

void infer_optional(InferContext& c) {
  if (c.has(0)) {
    const ir::TensorType& x = c.in(0);
    if (x.kind == ValueKind::Optional) fail(c.node.where() + ": an optional cannot hold an optional");
    c.out(0) = x.with_kind(ValueKind::Optional, x.kind);
    return;
  }
  const ir::TensorType& t = type_attr(c.node);
  if (t.kind == ValueKind::Optional) fail(c.node.where() + ": an optional cannot hold an optional");
  c.out(0) = t.with_kind(ValueKind::Optional, t.kind);
}

void run_optional(KernelContext& c) {
  c.outputs[0] = c.has(0) ? Tensor::optional(c.in(0).dtype(), &c.in(0)) : Tensor::optional(type_attr(c.node).dtype, nullptr);
}

void infer_has(InferContext& c) { c.out(0) = ir::TensorType::of(DType::Bool, {}); }

void run_has(KernelContext& c) {
  const bool has = c.has(0) && (c.in(0).kind() != ValueKind::Optional || !c.in(0).items().empty());
  c.outputs[0] = Tensor::scalar<bool>(has);
}

void infer_get(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  c.out(0) = x.kind == ValueKind::Optional ? x.with_kind(x.held) : x;
}

void run_get(KernelContext& c) {
  const Tensor& x = c.in(0);
  if (x.kind() != ValueKind::Optional) {
    c.outputs[0] = x;
    return;
  }
  if (x.items().empty()) fail(c.node.where() + ": the optional input is empty");
  c.outputs[0] = x.items()[0];
}

}  // namespace

extern const OpDef kOpOptional;
const OpDef kOpOptional{"Optional", "", 0, 1, infer_optional, run_optional, nullptr, nullptr, false, true};
extern const OpDef kOpOptionalHasElement;
const OpDef kOpOptionalHasElement{"OptionalHasElement", "", 0, 1, infer_has, run_has, nullptr, nullptr, false, true};
extern const OpDef kOpOptionalGetElement;
const OpDef kOpOptionalGetElement{"OptionalGetElement", "", 1, 1, infer_get, run_get, nullptr, nullptr, false, true};

}  // namespace joule::ops
