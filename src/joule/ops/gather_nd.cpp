// GatherND (batch_dims): out = indices.shape[:-1] + data.shape[batch_dims + k:].
#include <algorithm>
#include <cstring>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

std::vector<ir::Dim> gather_nd_dims(const ir::TensorType& data, const ir::TensorType& idx,
                                    const ir::Node& node) {
  const int64_t r = rank_of(data), q = rank_of(idx);
  const int64_t b = node.attr_int("batch_dims", 0);
  if (r < 1 || q < 1) fail(node.where() + ": data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q)) fail(node.where() + ": batch_dims " + std::to_string(b) + " out of range");
  const ir::Dim& last = idx.dims.back();
  if (!last.is_static()) return {};
  const int64_t k = last.value;
  if (k < 1 || k > r - b)
    fail(node.where() + ": indices last dim " + std::to_string(k) + " out of range for data rank " +
         std::to_string(r) + " and batch_dims " + std::to_string(b));
  for (int64_t i = 0; i < b; ++i) {
    const ir::Dim &dd = data.dims[static_cast<size_t>(i)], &id = idx.dims[static_cast<size_t>(i)];
    if (dd.is_static() && id.is_static() && dd.value != id.value)
      fail(node.where() + ": batch dims of data and indices differ");
  }
  std::vector<ir::Dim> dims(idx.dims.begin(), idx.dims.end() - 1);
  dims.insert(dims.end(), data.dims.begin() + b + k, data.dims.end());
  return dims;
}

void infer(InferContext& c) {
  const ir::TensorType& data = c.in(0);
  const ir::TensorType& idx = c.in(1);
  if (!data.has_shape || !idx.has_shape) {
    c.out(0) = unknown_rank(data.dtype);
    return;
  }
  auto dims = gather_nd_dims(data, idx, c.node);
  c.out(0) = (idx.dims.back().is_static()) ? make_type(data.dtype, dims) : unknown_rank(data.dtype);
}

void run(KernelContext& c) {
  const Tensor& data = c.in(0);
  const Tensor& idx = c.in(1);
  const Shape out_shape = shape_of(gather_nd_dims(ir::TensorType::of(data.dtype(), data.shape()),
                                                  ir::TensorType::of(idx.dtype(), idx.shape()), c.node));
  const auto indices = index_values(idx, c.node, "indices");
  const size_t b = static_cast<size_t>(c.node.attr_int("batch_dims", 0));
  const size_t k = static_cast<size_t>(idx.shape().back());
  const Shape& ds = data.shape();
  int64_t batches = 1, slice = 1;
  for (size_t d = 0; d < b; ++d) batches *= ds[d];
  for (size_t d = b + k; d < ds.size(); ++d) slice *= ds[d];
  const int64_t batch_size = batches ? data.numel() / batches : 0;  // elements per batch
  const int64_t tuples = static_cast<int64_t>(indices.size() / k);
  const int64_t per_batch = batches ? tuples / batches : 0;
  const auto strides = shape_strides(ds);
  Tensor out(data.dtype(), out_shape);
  const size_t es = dtype_size(data.dtype());
  const auto* src = static_cast<const std::byte*>(data.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = (per_batch ? t / per_batch : 0) * batch_size;
    for (size_t j = 0; j < k; ++j)
      off += normalize_index(indices[static_cast<size_t>(t) * k + j], ds[b + j], c.node) * strides[b + j];
    std::memcpy(dst + static_cast<size_t>(t * slice) * es, src + static_cast<size_t>(off) * es,
                static_cast<size_t>(slice) * es);
  }
  c.outputs[0] = out;
}

}  // namespace

extern const OpDef kOpGatherND;
const OpDef kOpGatherND{"GatherND", "", 2, 2, infer, run, data_movement_cost};

}  // namespace joule::ops
