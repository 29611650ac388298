// Slice: opset 10+ inputs starts/ends/axes/steps (negative steps, clamping); opset 1-9 attributes.
#include <algorithm>
#include <limits>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

std::vector<ir::Dim> slice_dims(const std::vector<ir::Dim>& in, const SliceParams& p) {
  std::vector<ir::Dim> out = in;
  for (size_t i = 0; i < p.axes.size(); ++i) {
    ir::Dim& d = out[static_cast<size_t>(p.axes[i])];
    if (d.is_static()) {
      d = ir::Dim{slice_axis(d.value, p.starts[i], p.ends[i], p.steps[i]).count, ""};
    } else if (!(p.starts[i] == 0 && p.steps[i] == 1 &&
                 p.ends[i] >= std::numeric_limits<int32_t>::max())) {
      d = ir::Dim{};  // a full slice keeps a symbolic dim; anything else is unknown
    }
  }
  return out;
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (!x.has_shape) {
    c.out(0) = unknown_rank(x.dtype);
    return;
  }
  SliceParams p;
  if (c.opset < 10) {
    p.starts = c.node.attr_ints("starts");
    p.ends = c.node.attr_ints("ends");
    p.axes = c.node.attr_ints("axes");
  } else {
    auto starts = known_ints(c, 1), ends = known_ints(c, 2);
    auto axes = known_ints(c, 3), steps = known_ints(c, 4);
    if (!starts || !ends || (c.has(3) && !axes) || (c.has(4) && !steps)) {
      std::vector<ir::Dim> dims = x.dims;
      if (axes) {
        for (int64_t a : *axes) dims[static_cast<size_t>(normalize_axis(a, rank_of(x), c.node))] = ir::Dim{};
      } else {
        dims = unknown_dims(x.dims.size());
      }
      c.out(0) = make_type(x.dtype, dims);
      return;
    }
    p = SliceParams{*starts, *ends, axes ? *axes : std::vector<int64_t>{},
                    steps ? *steps : std::vector<int64_t>{}};
  }
  normalize_slice_params(p, rank_of(x), c.node);
  c.out(0) = make_type(x.dtype, slice_dims(x.dims, p));
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  SliceParams p;
  if (c.opset < 10) {
    p.starts = c.node.attr_ints("starts");
    p.ends = c.node.attr_ints("ends");
    p.axes = c.node.attr_ints("axes");
  } else {
    p.starts = c.in(1).to_int_vector();
    p.ends = c.in(2).to_int_vector();
    p.axes = int_list_input(c, 3);
    p.steps = int_list_input(c, 4);
    if (c.has(3) && p.axes.empty() && !p.starts.empty())
      fail(c.node.where() + ": axes input is empty");
  }
  normalize_slice_params(p, x.rank(), c.node);
  const SliceView v = slice_view(x.shape(), p);
  c.outputs[0] = strided_copy(x, v.shape, v.strides, v.offset);
}

}  // namespace

extern const OpDef kOpSlice;
const OpDef kOpSlice{"Slice", "", 1, 5, infer, run, data_movement_cost};

}  // namespace joule::ops
