// ScatterElements (reduction from opset 16) and the deprecated Scatter (opset 9-10, no reduction):
// out = copy of data; out[i with i[axis] = indices[i]] (op)= updates[i].
#include <cstring>

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
  if (idx.dtype() != DType::Int64 && idx.dtype() != DType::Int32)
    fail(c.node.where() + ": indices must be int32 or int64, got " + dtype_name(idx.dtype()));
  if (upd.dtype() != data.dtype())
    fail(c.node.where() + ": updates dtype " + dtype_name(upd.dtype()) + " differs from data " + dtype_name(data.dtype()));
  const auto data_strides = shape_strides(data.shape());
  const size_t rank = data.shape().size();
  const int64_t axis_dim = data.shape()[axis];
  auto index_at = [&](int64_t i) {
    return normalize_index(idx.dtype() == DType::Int64 ? idx.data<int64_t>()[i] : idx.data<int32_t>()[i], axis_dim, c.node);
  };
  // emit(i, offset) for every element i of indices/updates, row by row (all dims but the last):
  // the row's offset in data once, then the last dim's elements; only the axis coordinate
  // comes from `indices`.
  auto for_each = [&](auto&& emit) {
    const int64_t last = idx.shape().back(), rows = last == 0 ? 0 : idx.numel() / last;
    std::vector<int64_t> coord(rank, 0);
    for (int64_t row = 0; row < rows; ++row) {
      int64_t base = 0;
      for (size_t d = 0; d + 1 < rank; ++d)
        if (d != axis) base += coord[d] * data_strides[d];
      for (int64_t j = 0; j < last; ++j) {
        const int64_t i = row * last + j;
        emit(i, base + index_at(i) * data_strides[axis] + (axis + 1 == rank ? 0 : j));
      }
      for (size_t d = rank - 1; d-- > 0;) {  // next row: an odometer over dims 0 .. rank-2
        if (++coord[d] < idx.shape()[d]) break;
        coord[d] = 0;
      }
    }
  };
  Tensor out = data.clone();
  const size_t es = dtype_size(data.dtype());
  if (red == Reduction::None && (es == 4 || es == 8)) {  // written in place: no offset list
    auto* dst = static_cast<std::byte*>(out.raw());
    const auto* src = static_cast<const std::byte*>(upd.raw());
    if (es == 4) for_each([&](int64_t i, int64_t off) { std::memcpy(dst + off * 4, src + i * 4, 4); });
    else for_each([&](int64_t i, int64_t off) { std::memcpy(dst + off * 8, src + i * 8, 8); });
  } else {
    std::vector<int64_t> offsets(static_cast<size_t>(idx.numel()));
    for_each([&](int64_t i, int64_t off) { offsets[static_cast<size_t>(i)] = off; });
    scatter_slices(out, upd, offsets, 1, red, c.node);
  }
  c.outputs[0] = out;
}

}  // namespace

extern const OpDef kOpScatterElements;
const OpDef kOpScatterElements{"ScatterElements", "", 3, 3, infer, run, data_movement_cost};
extern const OpDef kOpScatter;
const OpDef kOpScatter{"Scatter", "", 3, 3, infer, run, data_movement_cost};

}  // namespace joule::ops
