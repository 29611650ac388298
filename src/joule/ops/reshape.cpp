// Reshape (opset 1: `shape` attribute; opset 5+: shape input; opset 14: allowzero).
#include <algorithm>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

// Output dims of reshaping `in` (dims, or unknown rank when !has_shape) to `spec`.
// Dims that cannot be known stay unknown; definite errors throw.
std::vector<ir::Dim> reshape_dims(const ir::TensorType& in, const std::vector<int64_t>& spec,
                                  bool allowzero, const ir::Node& node) {
  int64_t infer_at = -1;
  bool has_zero = false;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec[i] == -1) {
      if (infer_at >= 0) fail(node.where() + ": shape has more than one -1");
      infer_at = static_cast<int64_t>(i);
    } else if (spec[i] < -1) {
      fail(node.where() + ": invalid shape value " + std::to_string(spec[i]));
    } else if (spec[i] == 0) {
      has_zero = true;
    }
  }
  if (allowzero && has_zero && infer_at >= 0)
    fail(node.where() + ": allowzero=1 forbids a shape with both 0 and -1");

  std::vector<ir::Dim> out(spec.size());
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec[i] > 0 || (spec[i] == 0 && allowzero)) {
      out[i] = ir::Dim{spec[i], ""};
    } else if (spec[i] == 0) {
      if (!in.has_shape) continue;  // unknown
      if (i >= in.dims.size())
        fail(node.where() + ": shape value 0 at index " + std::to_string(i) +
             " copies a dimension the input (rank " + std::to_string(in.dims.size()) + ") lacks");
      out[i] = in.dims[i];
    }
  }
  if (!in.has_shape) return out;

  // Static product and symbolic names on each side; symbols present on both sides cancel.
  int64_t in_prod = 1, out_prod = 1;
  std::vector<std::string> in_syms, out_syms;
  bool unknown = false;
  for (auto& d : in.dims) {
    if (d.is_static()) {
      if (__builtin_mul_overflow(in_prod, d.value, &in_prod)) fail(node.where() + ": input shape has more than 2^63 elements");
    } else if (d.param.empty()) {
      unknown = true;
    } else {
      in_syms.push_back(d.param);
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (static_cast<int64_t>(i) == infer_at) continue;
    const ir::Dim& d = out[i];
    if (d.is_static()) {
      if (__builtin_mul_overflow(out_prod, d.value, &out_prod)) fail(node.where() + ": shape has more than 2^63 elements");
    } else if (d.param.empty()) {
      unknown = true;
    } else {
      auto it = std::find(in_syms.begin(), in_syms.end(), d.param);
      if (it != in_syms.end()) in_syms.erase(it);
      else out_syms.push_back(d.param);
    }
  }
  if (unknown || !out_syms.empty()) return out;
  if (infer_at < 0) {
    if (in_syms.empty() && in_prod != out_prod)
      fail(node.where() + ": cannot reshape " + ir::dims_str(in.dims) + " to " +
           ir::dims_str(out));
    return out;
  }
  ir::Dim& inferred = out[static_cast<size_t>(infer_at)];
  if (in_syms.empty()) {
    if (out_prod == 0) {
      if (in_prod != 0) fail(node.where() + ": cannot reshape " + ir::dims_str(in.dims) +
                             " to a shape with 0 and -1");
      fail(node.where() + ": -1 is ambiguous when the other dims multiply to 0");
    }
    if (in_prod % out_prod != 0)
      fail(node.where() + ": cannot reshape " + ir::dims_str(in.dims) + " to " + ir::dims_str(out) +
           " (-1 not integral)");
    inferred = ir::Dim{in_prod / out_prod, ""};
  } else if (in_syms.size() == 1 && in_prod == out_prod) {
    inferred = ir::Dim{-1, in_syms[0]};
  }
  return out;
}

// Opset 1-4 (or a node without the shape input): the `shape` attribute.
std::vector<int64_t> attr_shape(const ir::Node& node) { return node.attr_ints("shape"); }

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  const bool allowzero = c.opset >= 14 && c.node.attr_int("allowzero", 0) != 0;
  std::optional<std::vector<int64_t>> spec;
  if (c.opset < 5 || !c.node.has_input(1)) spec = attr_shape(c.node);
  else spec = known_ints(c, 1);
  if (spec) {
    c.out(0) = make_type(x.dtype, reshape_dims(x, *spec, allowzero, c.node));
    return;
  }
  int64_t len = static_length(c, 1);
  c.out(0) = len >= 0 ? make_type(x.dtype, unknown_dims(static_cast<size_t>(len)))
                      : unknown_rank(x.dtype);
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  const bool allowzero = c.opset >= 14 && c.node.attr_int("allowzero", 0) != 0;
  std::vector<int64_t> spec = (c.opset < 5 || !c.has(1)) ? attr_shape(c.node)
                                                         : c.in(1).to_int_vector();
  auto dims = reshape_dims(ir::TensorType::of(x.dtype(), x.shape()), spec, allowzero, c.node);
  c.outputs[0] = x.reshaped(shape_of(dims));
}

}  // namespace

extern const OpDef kOpReshape;
const OpDef kOpReshape{"Reshape", "", 1, 2, infer, run, data_movement_cost, nullptr, true};

}  // namespace joule::ops
