// ScatterElements (reduction from opset 16) and the deprecated Scatter (opset 9-10, no reduction):
// out = copy of data; out[i with i[axis] = indices[i]] (op)= updates[i].
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

void infer(InferContext& c) {
  const ir::TensorType& data = c.in(0);
  const ir::TensorType& idx = c.in(1);
  if (data.has_shape && idx.has_shape) {
    if (data.dims.size() != idx.dims.size() || data.dims.empty())
      fail(c.node.where() + ": data and indices must have the same rank >= 1");
    normalize_axis(c.node.attr_int("axis", 0), rank_of(data), c.node);
  }
  if (c.node.op_type != "Scatter") parse_reduction(c.node, c.opset);
  infer_same_as_input(c, 0);
}

void run(KernelContext& c) {
  const Tensor& data = c.in(0);
  const Tensor& idx = c.in(1);
  const Tensor& upd = c.in(2);
  if (data.rank() != idx.rank() || data.rank() < 1 || idx.shape() != upd.shape())
    fail(c.node.where() + ": data, indices and updates must share rank, indices and updates shape (" +
         shape_str(data.shape()) + ", " + shape_str(idx.shape()) + ", " + shape_str(upd.shape()) + ")");
  const Reduction red = c.node.op_type == "Scatter" ? Reduction::None : parse_reduction(c.node, c.opset);
  const size_t axis = static_cast<size_t>(normalize_axis(c.node.attr_int("axis", 0), data.rank(), c.node));
  for (size_t d = 0; d < data.shape().size(); ++d)
    if (d != axis && idx.shape()[d] > data.shape()[d])
      fail(c.node.where() + ": indices shape " + shape_str(idx.shape()) + " exceeds data shape " +
           shape_str(data.shape()));
  const auto indices = index_values(idx, c.node, "indices");
  const auto idx_strides = shape_strides(idx.shape());
  const auto data_strides = shape_strides(data.shape());
  std::vector<int64_t> offsets(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) {
    int64_t rem = static_cast<int64_t>(i), off = 0;
    for (size_t d = 0; d < idx_strides.size(); ++d) {
      int64_t q = rem / idx_strides[d];
      rem -= q * idx_strides[d];
      if (d == axis) q = normalize_index(indices[i], data.shape()[axis], c.node);
      off += q * data_strides[d];
    }
    offsets[i] = off;
  }
  Tensor out = data.clone();
  scatter_slices(out, upd, offsets, 1, red, c.node);
  c.outputs[0] = out;
}

}  // namespace

extern const OpDef kOpScatterElements;
const OpDef kOpScatterElements{"ScatterElements", "", 3, 3, infer, run, data_movement_cost};
extern const OpDef kOpScatter;
const OpDef kOpScatter{"Scatter", "", 3, 3, infer, run, data_movement_cost};

}  // namespace joule::ops
