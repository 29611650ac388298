// ScatterND: out = copy of data; slices of updates written at index tuples
// (reduction none/add/mul from opset 16, max/min from 18).
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

void check_shapes(const ir::TensorType& data, const ir::TensorType& idx, const ir::TensorType& upd,
                  const ir::Node& node) {
  if (!data.has_shape || !idx.has_shape || !upd.has_shape) return;
  const int64_t r = rank_of(data), q = rank_of(idx);
  if (r < 1 || q < 1) fail(node.where() + ": data and indices must have rank >= 1");
  if (!idx.dims.back().is_static()) return;
  const int64_t k = idx.dims.back().value;
  if (k > r) fail(node.where() + ": indices last dim " + std::to_string(k) + " exceeds data rank");
  std::vector<ir::Dim> want(idx.dims.begin(), idx.dims.end() - 1);
  want.insert(want.end(), data.dims.begin() + k, data.dims.end());
  bool ok = want.size() == upd.dims.size();
  for (size_t i = 0; ok && i < want.size(); ++i)
    if (want[i].is_static() && upd.dims[i].is_static() && want[i].value != upd.dims[i].value) ok = false;
  if (!ok)
    fail(node.where() + ": updates shape " + ir::dims_str(upd.dims) + " must be " + ir::dims_str(want));
}

void infer(InferContext& c) {
  check_shapes(c.in(0), c.in(1), c.in(2), c.node);
  parse_reduction(c.node, c.opset);
  infer_same_as_input(c, 0);
}

void run(KernelContext& c) {
  const Tensor& data = c.in(0);
  const Tensor& idx = c.in(1);
  const Tensor& upd = c.in(2);
  check_shapes(ir::TensorType::of(data.dtype(), data.shape()), ir::TensorType::of(idx.dtype(), idx.shape()),
               ir::TensorType::of(upd.dtype(), upd.shape()), c.node);
  const Reduction red = parse_reduction(c.node, c.opset);
  const auto indices = index_values(idx, c.node, "indices");
  const size_t k = static_cast<size_t>(idx.shape().back());
  const auto strides = shape_strides(data.shape());
  int64_t slice = 1;
  for (size_t d = k; d < data.shape().size(); ++d) slice *= data.shape()[d];
  const size_t tuples = k ? indices.size() / k : static_cast<size_t>(idx.numel());
  std::vector<int64_t> offsets(tuples, 0);
  for (size_t t = 0; t < tuples; ++t)
    for (size_t j = 0; j < k; ++j)
      offsets[t] += normalize_index(indices[t * k + j], data.shape()[j], c.node) * strides[j];
  Tensor out = data.clone();
  scatter_slices(out, upd, offsets, slice, red, c.node);
  c.outputs[0] = out;
}

}  // namespace

extern const OpDef kOpScatterND;
const OpDef kOpScatterND{"ScatterND", "", 3, 3, infer, run, data_movement_cost};

}  // namespace joule::ops
