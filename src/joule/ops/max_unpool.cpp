// MaxUnpool: the partial inverse of MaxPool. Y starts at zero and Y[I[i]] = X[i], where I
// (int64, X's shape) holds linear indices into the whole unpooled tensor [N, C, D1, ...]. Its
// default shape is N, C, (D - 1) * stride + kernel - pad_begin - pad_end per spatial axis. With
// the optional output_shape input the pads are ignored, the indices still address that default
// shape (pads = 0) and the output is the default shape extended at the end of each axis to
// output_shape (as the ONNX test case does); output_shape may not be smaller.
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

struct Geometry {
  std::vector<int64_t> kernel, strides, pads;
};

Geometry geometry(const ir::Node& node, size_t spatial) {
  Geometry g{node.attr_ints("kernel_shape"), node.attr_ints("strides", std::vector<int64_t>(spatial, 1)),
             node.attr_ints("pads", std::vector<int64_t>(2 * spatial, 0))};
  if (g.kernel.size() != spatial || g.strides.size() != spatial || g.pads.size() != 2 * spatial)
    fail(node.where() + ": kernel_shape, strides and pads must have " + std::to_string(spatial) + ", " +
         std::to_string(spatial) + " and " + std::to_string(2 * spatial) + " values for the input's rank");
  return g;
}

// The default output dims (pads ignored when there is an output_shape input).
std::vector<ir::Dim> default_dims(const ir::Node& node, const std::vector<ir::Dim>& x, bool with_pads) {
  if (x.size() < 3) fail(node.where() + ": X must be [N, C, D1, ...]");
  const size_t sp = x.size() - 2;
  const Geometry g = geometry(node, sp);
  std::vector<ir::Dim> out = x;
  for (size_t d = 0; d < sp; ++d) {
    const ir::Dim& in = x[d + 2];
    if (!in.is_static()) {
      out[d + 2] = ir::Dim{};
      continue;
    }
    const int64_t pad = with_pads ? g.pads[d] + g.pads[d + sp] : 0;
    const int64_t v = (in.value - 1) * g.strides[d] + g.kernel[d] - pad;
    if (v < 1) fail(node.where() + ": unpooled axis " + std::to_string(d + 2) + " would have size " + std::to_string(v));
    out[d + 2] = ir::Dim{v, ""};
  }
  return out;
}

std::string check(const ir::Node& node, int64_t) {
  if (!node.has_attr("kernel_shape")) return "kernel_shape is required";
  return "";
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  if (c.has(2)) {
    const auto shape = known_ints(c, 2);
    if (shape) c.out(0) = make_type(x.dtype, dims_of(*shape));
    else {
      const int64_t r = static_length(c, 2);
      c.out(0) = r >= 0 ? make_type(x.dtype, unknown_dims(static_cast<size_t>(r))) : unknown_rank(x.dtype);
    }
    return;
  }
  c.out(0) = x.has_shape ? make_type(x.dtype, default_dims(c.node, x.dims, true)) : unknown_rank(x.dtype);
}

void run(KernelContext& c) {
  const Tensor& X = c.in(0);
  const Tensor& I = c.in(1);
  if (I.shape() != X.shape()) fail(c.node.where() + ": I " + I.describe() + " must have X's shape " + shape_str(X.shape()));
  const Shape inner = shape_of(default_dims(c.node, dims_of(X.shape()), !c.has(2)));
  Shape out_shape = inner;
  if (c.has(2)) {
    out_shape = int_list_input(c, 2);
    bool ok = out_shape.size() == inner.size() && out_shape[0] == inner[0] && out_shape[1] == inner[1];
    for (size_t d = 2; ok && d < inner.size(); ++d) ok = out_shape[d] >= inner[d];
    if (!ok)
      fail(c.node.where() + ": output_shape " + shape_str(out_shape) + " must keep N, C and be at least the unpooled shape " +
           shape_str(inner));
  }
  const std::vector<int64_t> idx = index_values(I, c.node, "I");
  const int64_t total = shape_numel(inner);
  const auto in_strides = shape_strides(inner), out_strides = shape_strides(out_shape);
  Tensor Y(X.dtype(), out_shape);  // zero-initialised
  visit_elem_bytes(X.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* x = static_cast<const U*>(X.raw());
    U* y = static_cast<U*>(Y.raw());
    for (size_t i = 0; i < idx.size(); ++i) {
      int64_t rem = idx[i], off = 0;
      if (rem < 0 || rem >= total)
        fail(c.node.where() + ": index " + std::to_string(rem) + " is outside the unpooled shape " + shape_str(inner));
      for (size_t d = 0; d < inner.size(); ++d) {
        off += rem / in_strides[d] * out_strides[d];
        rem %= in_strides[d];
      }
      y[off] = x[i];
    }
  });
  c.outputs[0] = Y;
}

}  // namespace

extern const OpDef kOpMaxUnpool;
const OpDef kOpMaxUnpool{"MaxUnpool", "", 2, 3, infer, run, data_movement_cost, check};

}  // namespace joule::ops
