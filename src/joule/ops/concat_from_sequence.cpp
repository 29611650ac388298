// ConcatFromSequence (opset 11): a sequence's tensors joined along `axis` (every other dim
// equal), or, with new_axis = 1, stacked along a new axis (then axis may be -r-1 .. r).
#include "joule/ops/sequence_util.h"
#include "joule/ops/util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  const ir::TensorType& s = seq::sequence_input(c, 0);
  seq::require_numeric(c.node, s.dtype);
  ir::TensorType t = s.with_kind(ValueKind::Tensor);
  if (s.has_shape) {
    const bool new_axis = c.node.attr_int("new_axis", 0) != 0;
    const int64_t rank = static_cast<int64_t>(s.dims.size()) + (new_axis ? 1 : 0);
    if (!c.node.has_attr("axis")) fail(c.node.where() + ": attribute 'axis' is required");
    const int64_t axis = normalize_axis(c.node.attr_int("axis", 0), rank, c.node);
    if (new_axis) t.dims.insert(t.dims.begin() + axis, ir::Dim{});
    else t.dims[static_cast<size_t>(axis)] = ir::Dim{};
  }
  c.out(0) = t;
}

void run(KernelContext& c) {
  const Tensor& s = seq::sequence_value(c, 0);
  c.outputs[0] = seq::join(s.items(), c.node.attr_int("axis", 0), c.node.attr_int("new_axis", 0) != 0, c.node.where());
}

}  // namespace

extern const OpDef kOpConcatFromSequence;
const OpDef kOpConcatFromSequence{"ConcatFromSequence", "", 1, 1, infer, run, nullptr, nullptr, false, true};

}  // namespace joule::ops
