// Expand: bidirectional (numpy) broadcast of the input against the shape input.
#include <algorithm>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (auto shape = known_ints(c, 1)) {
    for (int64_t d : *shape)
      if (d < 0) fail(c.node.where() + ": negative dimension in shape");
    ir::TensorType s = make_type(x.dtype, dims_of(*shape));
    c.out(0) = broadcast_types({&x, &s}, x.dtype, c.node);
    return;
  }
  const int64_t n = static_length(c, 1);
  if (!x.has_shape || n < 0) {
    c.out(0) = unknown_rank(x.dtype);
    return;
  }
  c.out(0) = make_type(x.dtype, unknown_dims(std::max<size_t>(x.dims.size(), static_cast<size_t>(n))));
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  const auto shape = c.in(1).to_int_vector();
  for (int64_t d : shape)
    if (d < 0) fail(c.node.where() + ": negative dimension in shape");
  const Shape out = broadcast_shapes({x.shape(), shape}, c.node);
  const size_t off = out.size() - x.shape().size();
  const auto in_strides = shape_strides(x.shape());
  std::vector<int64_t> strides(out.size(), 0);
  for (size_t d = 0; d < x.shape().size(); ++d)
    strides[off + d] = x.shape()[d] == 1 ? 0 : in_strides[d];
  c.outputs[0] = strided_copy(x, out, strides, 0);
}

}  // namespace

extern const OpDef kOpExpand;
const OpDef kOpExpand{"Expand", "", 2, 2, infer, run, data_movement_cost};

}  // namespace joule::ops
