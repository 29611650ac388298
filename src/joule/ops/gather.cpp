// Gather: out = data[:axis] + indices.shape + data[axis+1:] (negative indices allowed).
#include <cstring>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

std::vector<ir::Dim> gather_dims(const ir::TensorType& data, const ir::TensorType& idx,
                                 const ir::Node& node) {
  const size_t axis =
      static_cast<size_t>(normalize_axis(node.attr_int("axis", 0), rank_of(data), node));
  std::vector<ir::Dim> dims(data.dims.begin(), data.dims.begin() + static_cast<long>(axis));
  dims.insert(dims.end(), idx.dims.begin(), idx.dims.end());
  dims.insert(dims.end(), data.dims.begin() + static_cast<long>(axis) + 1, data.dims.end());
  return dims;
}

void infer(InferContext& c) {
  const ir::TensorType& data = c.in(0);
  const ir::TensorType& idx = c.in(1);
  if (!data.has_shape || !idx.has_shape) {
    c.out(0) = unknown_rank(data.dtype);
    return;
  }
  c.out(0) = make_type(data.dtype, gather_dims(data, idx, c.node));
}

void run(KernelContext& c) {
  const Tensor& data = c.in(0);
  const Tensor& idx = c.in(1);
  const Shape out_shape = shape_of(gather_dims(ir::TensorType::of(data.dtype(), data.shape()),
                                               ir::TensorType::of(idx.dtype(), idx.shape()), c.node));
  const size_t axis = static_cast<size_t>(normalize_axis(c.node.attr_int("axis", 0), data.rank(), c.node));
  const auto indices = index_values(idx, c.node, "indices");
  Tensor out(data.dtype(), out_shape);
  const int64_t dim = data.shape()[axis];
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= data.shape()[d];
  for (size_t d = axis + 1; d < data.shape().size(); ++d) inner *= data.shape()[d];
  const size_t row = static_cast<size_t>(inner) * dtype_size(data.dtype());
  std::vector<int64_t> norm(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) norm[k] = normalize_index(indices[k], dim, c.node);
  const auto* src = static_cast<const std::byte*>(data.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  if (row == 0) {
    c.outputs[0] = out;
    return;
  }
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < norm.size(); ++k) {
      std::memcpy(dst, src + static_cast<size_t>(o * dim + norm[k]) * row, row);
      dst += row;
    }
  c.outputs[0] = out;
}

}  // namespace

extern const OpDef kOpGather;
const OpDef kOpGather{"Gather", "", 2, 2, infer, run, data_movement_cost};

}  // namespace joule::ops
