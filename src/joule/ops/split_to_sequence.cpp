// SplitToSequence (opset 11): input split along `axis` into a sequence. `split` absent: pieces
// of length 1, the axis dropped unless keepdims; a scalar: pieces of that length (the last one
// shorter when the dim is not a multiple); 1-D: the pieces' lengths, which must sum to the dim.
#include "joule/ops/sequence_util.h"
#include "joule/ops/util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) {
  const ir::TensorType& x = seq::tensor_input(c, 0);
  seq::require_numeric(c.node, x.dtype);
  ir::TensorType item = x;
  if (x.has_shape) {
    const int64_t axis = normalize_axis(c.node.attr_int("axis", 0), static_cast<int64_t>(x.dims.size()), c.node);
    if (!c.has(1) && c.node.attr_int("keepdims", 1) == 0) item.dims.erase(item.dims.begin() + axis);
    else item.dims[static_cast<size_t>(axis)] = c.has(1) ? ir::Dim{} : ir::Dim{1, ""};
  }
  c.out(0) = item.with_kind(ValueKind::Sequence);
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  const int64_t axis = normalize_axis(c.node.attr_int("axis", 0), x.rank(), c.node);
  const int64_t dim = x.shape()[static_cast<size_t>(axis)];
  std::vector<int64_t> lengths;
  const bool squeeze = !c.has(1) && c.node.attr_int("keepdims", 1) == 0;
  if (!c.has(1)) {
    lengths.assign(static_cast<size_t>(dim), 1);
  } else if (c.in(1).rank() == 0) {
    const int64_t len = c.in(1).value_as_int(0);
    if (len <= 0) fail(c.node.where() + ": split must be positive, got " + std::to_string(len));
    for (int64_t at = 0; at < dim; at += len) lengths.push_back(std::min(len, dim - at));
  } else {
    lengths = c.in(1).to_int_vector();
    int64_t sum = 0;
    for (int64_t l : lengths) {
      if (l < 0) fail(c.node.where() + ": split lengths must be non-negative");
      sum += l;
    }
    if (sum != dim)
      fail(c.node.where() + ": split lengths sum to " + std::to_string(sum) + ", the axis has " + std::to_string(dim));
  }
  std::vector<Tensor> items;
  int64_t at = 0;
  for (int64_t len : lengths) {
    Tensor piece = seq::slice_axis(x, axis, at, len);
    if (squeeze) {
      Shape s = piece.shape();
      s.erase(s.begin() + axis);
      piece = piece.reshaped(s);
    }
    items.push_back(std::move(piece));
    at += len;
  }
  c.outputs[0] = Tensor::sequence(x.dtype(), std::move(items));
}

}  // namespace

extern const OpDef kOpSplitToSequence;
const OpDef kOpSplitToSequence{"SplitToSequence", "", 1, 2, infer, run, nullptr, nullptr, false, true};

}  // namespace joule::ops
