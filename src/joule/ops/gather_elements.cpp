// GatherElements: out[i] = data[i with i[axis] replaced by indices[i]]; out shape = indices shape.
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

void check_ranks(int64_t data_rank, int64_t idx_rank, const ir::Node& node) {
  if (data_rank != idx_rank || data_rank < 1)
    fail(node.where() + ": data and indices must have the same rank >= 1 (got " +
         std::to_string(data_rank) + " and " + std::to_string(idx_rank) + ")");
  normalize_axis(node.attr_int("axis", 0), data_rank, node);
}

void infer(InferContext& c) {
  const ir::TensorType& data = c.in(0);
  const ir::TensorType& idx = c.in(1);
  if (data.has_shape && idx.has_shape) check_ranks(rank_of(data), rank_of(idx), c.node);
  c.out(0) = idx;
  c.out(0).dtype = data.dtype;
}

void run(KernelContext& c) {
  const Tensor& data = c.in(0);
  const Tensor& idx = c.in(1);
  check_ranks(data.rank(), idx.rank(), c.node);
  const size_t axis = static_cast<size_t>(normalize_axis(c.node.attr_int("axis", 0), data.rank(), c.node));
  for (size_t d = 0; d < data.shape().size(); ++d)
    if (d != axis && idx.shape()[d] > data.shape()[d])
      fail(c.node.where() + ": indices shape " + shape_str(idx.shape()) + " exceeds data shape " +
           shape_str(data.shape()) + " outside the axis");
  const auto indices = index_values(idx, c.node, "indices");
  const auto dst_strides = shape_strides(idx.shape());
  const auto src_strides = shape_strides(data.shape());
  const int64_t dim = data.shape()[axis];
  Tensor out(data.dtype(), idx.shape());
  visit_elem_bytes(data.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = static_cast<const U*>(data.raw());
    U* dst = static_cast<U*>(out.raw());
    for (size_t i = 0; i < indices.size(); ++i) {
      int64_t rem = static_cast<int64_t>(i), off = 0;
      for (size_t d = 0; d < dst_strides.size(); ++d) {
        int64_t q = rem / dst_strides[d];
        rem -= q * dst_strides[d];
        if (d == axis) q = normalize_index(indices[i], dim, c.node);
        off += q * src_strides[d];
      }
      dst[i] = src[off];
    }
  });
  c.outputs[0] = out;
}

}  // namespace

extern const OpDef kOpGatherElements;
const OpDef kOpGatherElements{"GatherElements", "", 2, 2, infer, run, data_movement_cost};

}  // namespace joule::ops
