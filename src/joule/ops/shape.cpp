// Shape: the input's dims as int64[n] (opset 15: start/end slice them, clamped).
#include <algorithm>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

// [start, end) range of dims reported for rank r.
std::pair<size_t, size_t> dim_range(const ir::Node& node, int64_t opset, int64_t r) {
  int64_t start = opset >= 15 ? node.attr_int("start", 0) : 0;
  int64_t end = opset >= 15 ? node.attr_int("end", r) : r;
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  if (end < start) end = start;
  return {static_cast<size_t>(start), static_cast<size_t>(end)};
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (!x.has_shape) {
    c.out(0) = make_type(DType::Int64, unknown_dims(1));
    return;
  }
  auto [b, e] = dim_range(c.node, c.opset, rank_of(x));
  c.out(0) = make_type(DType::Int64, {ir::Dim{static_cast<int64_t>(e - b), ""}});
  std::vector<int64_t> v;
  for (size_t i = b; i < e; ++i) {
    if (!x.dims[i].is_static()) return;
    v.push_back(x.dims[i].value);
  }
  c.output_values[0] = Tensor::from_vector(v, {static_cast<int64_t>(v.size())});
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  auto [b, e] = dim_range(c.node, c.opset, x.rank());
  std::vector<int64_t> v(x.shape().begin() + static_cast<long>(b), x.shape().begin() + static_cast<long>(e));
  c.outputs[0] = Tensor::from_vector(v, {static_cast<int64_t>(v.size())});
}

}  // namespace

extern const OpDef kOpShape;
const OpDef kOpShape{"Shape", "", 1, 1, infer, run, data_movement_cost};

}  // namespace joule::ops
