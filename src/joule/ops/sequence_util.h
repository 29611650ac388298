#pragma once
// What the sequence and optional ops share: checking that an input is a sequence (or a tensor),
// the element type of several tensors, and sequence positions.
#include <vector>

#include "joule/ops/op.h"

namespace joule::ops::seq {

// Input i's type, which must be a sequence / a tensor (BadInput naming the node otherwise).
const ir::TensorType& sequence_input(const InferContext& c, size_t i);
const ir::TensorType& tensor_input(const InferContext& c, size_t i);
// Input i's value, which must be a sequence.
const Tensor& sequence_value(const KernelContext& c, size_t i);

// The tensor type every one of `items` has: the first's dtype, the dims on which all agree
// (unknown where they differ; no shape when the ranks differ or one has none).
ir::TensorType merge_items(const std::vector<const ir::TensorType*>& items);

// Position input i (an int32 or int64 scalar) as an index into a sequence of n items: it must be
// in [-n, n - 1], or in [-n, n] when `end_ok` (insertion at the back).
int64_t position(const KernelContext& c, size_t i, int64_t n, bool end_ok);


// Refuses string tensors in ops that copy element bytes (Unsupported naming the node).
void require_numeric(const ir::Node& n, DType t);

// x[..., start:start + len, ...] along `axis` (a copy).
Tensor slice_axis(const Tensor& x, int64_t axis, int64_t start, int64_t len);
// The tensors joined along `axis` (every other dim equal); with `new_axis`, stacked along a new
// axis `axis` of the result instead. `where` names the caller in errors.
Tensor join(const std::vector<Tensor>& parts, int64_t axis, bool new_axis, const std::string& where);

}  // namespace joule::ops::seq
