// Pad: modes constant/reflect/edge (and wrap); pads attribute before opset 11, input from 11
// (constant_value input, opset 18 axes input); negative pads crop.
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

// Full per-axis pads [b0..b(r-1), e0..e(r-1)] from `pads` over `axes` (empty: all axes).
std::vector<int64_t> full_pads(const std::vector<int64_t>& pads, std::optional<std::vector<int64_t>> axes,
                               int64_t r, const ir::Node& node) {
  std::vector<int64_t> ax;
  if (axes) {
    for (int64_t a : *axes) ax.push_back(normalize_axis(a, r, node));
  } else {
    for (int64_t i = 0; i < r; ++i) ax.push_back(i);
  }
  if (pads.size() != 2 * ax.size())
    fail(node.where() + ": pads has " + std::to_string(pads.size()) + " values, expected " +
         std::to_string(2 * ax.size()));
  std::vector<int64_t> full(static_cast<size_t>(2 * r), 0);
  for (size_t i = 0; i < ax.size(); ++i) {
    full[static_cast<size_t>(ax[i])] = pads[i];
    full[static_cast<size_t>(ax[i] + r)] = pads[i + ax.size()];
  }
  return full;
}

std::vector<ir::Dim> pad_dims(const std::vector<ir::Dim>& in, const std::vector<int64_t>& full,
                              const ir::Node& node) {
  const size_t r = in.size();
  std::vector<ir::Dim> out = in;
  for (size_t d = 0; d < r; ++d) {
    const int64_t add = full[d] + full[d + r];
    if (in[d].is_static()) {
      const int64_t v = in[d].value + add;
      if (v < 0) fail(node.where() + ": pads crop axis " + std::to_string(d) + " below zero");
      out[d] = ir::Dim{v, ""};
    } else if (add != 0 || full[d] != 0) {
      out[d] = ir::Dim{};
    }
  }
  return out;
}

std::string get_mode(const ir::Node& node) {
  std::string m = node.attr_string("mode", "constant");
  if (m != "constant" && m != "reflect" && m != "edge" && m != "wrap")
    fail(node.where() + ": unknown mode '" + m + "'");
  return m;
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  get_mode(c.node);
  if (!x.has_shape) {
    c.out(0) = unknown_rank(x.dtype);
    return;
  }
  std::optional<std::vector<int64_t>> pads, axes;
  if (c.opset < 11) {
    pads = c.node.attr_ints("pads");
  } else {
    pads = known_ints(c, 1);
    if (c.has(3)) {
      axes = known_ints(c, 3);
      if (!axes) pads.reset();
    }
  }
  if (!pads) {
    c.out(0) = make_type(x.dtype, unknown_dims(x.dims.size()));
    return;
  }
  c.out(0) = make_type(x.dtype, pad_dims(x.dims, full_pads(*pads, axes, rank_of(x), c.node), c.node));
}

// Source index along one axis of size n for output position pos (= o - pad_begin); -1: fill.
int64_t source_index(int64_t pos, int64_t n, const std::string& mode) {
  if (pos >= 0 && pos < n) return pos;
  if (mode == "constant") return -1;
  if (mode == "edge") return pos < 0 ? 0 : n - 1;
  if (mode == "wrap") return ((pos % n) + n) % n;
  if (n == 1) return 0;  // reflect
  const int64_t period = 2 * (n - 1);
  int64_t p = ((pos % period) + period) % period;
  return p >= n ? period - p : p;
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  const std::string mode = get_mode(c.node);
  std::vector<int64_t> pads;
  std::optional<std::vector<int64_t>> axes;
  Tensor fill(x.dtype(), {});
  if (c.opset < 11) {
    pads = c.node.attr_ints("pads");
    fill = Tensor::scalar<float>(c.node.attr_float("value", 0.f)).cast(x.dtype());
  } else {
    pads = c.in(1).to_int_vector();
    if (c.has(2)) {
      const Tensor& v = c.in(2);
      if (v.dtype() != x.dtype())
        fail(c.node.where() + ": constant_value dtype differs from data");
      if (v.numel() >= 1) fill = one_element(v);
    }
    if (c.has(3)) axes = c.in(3).to_int_vector();
  }
  const auto full = full_pads(pads, axes, x.rank(), c.node);
  const Shape out = shape_of(pad_dims(dims_of(x.shape()), full, c.node));
  checked_nbytes(x.dtype(), out, c.node.where());  // before the index maps, which are as long as the output's dims
  const size_t r = out.size();
  std::vector<std::vector<int64_t>> maps(r);
  for (size_t d = 0; d < r; ++d) {
    const int64_t n = x.shape()[d];
    if (n == 0 && mode != "constant" && out[d] > 0)
      fail(c.node.where() + ": cannot " + mode + "-pad an empty axis");
    maps[d].resize(static_cast<size_t>(out[d]));
    for (int64_t o = 0; o < out[d]; ++o) maps[d][static_cast<size_t>(o)] = source_index(o - full[d], n, mode);
  }
  c.outputs[0] = mapped_copy(x, out, maps, &fill);
}

}  // namespace

extern const OpDef kOpPad;
const OpDef kOpPad{"Pad", "", 1, 4, infer, run, data_movement_cost};

}  // namespace joule::ops
