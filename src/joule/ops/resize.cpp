// Resize (opset 10-18) and the deprecated Upsample (7-9). Modes nearest (all nearest_modes),
// linear (N-D, separable) and cubic (cubic_coeff_a, exclude_outside); coordinate transforms
// half_pixel, pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn,
// tf_crop_and_resize (roi, extrapolation_value). Output from scales (floor(in*scale)) or sizes
// (opset 18: axes, keep_aspect_ratio_policy). Nearest moves bytes (any dtype); linear/cubic
// compute in double for floating dtypes.
#include <algorithm>
#include <cmath>

#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {
using namespace movement;

struct Params {
  std::string mode, ctm, nearest_mode;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
};

Params params(const ir::Node& node, int64_t opset) {
  Params p;
  p.mode = node.attr_string("mode", "nearest");
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic" && p.mode != "bilinear")
    fail(node.where() + ": unknown mode '" + p.mode + "'");
  if (p.mode == "bilinear") p.mode = "linear";
  if (p.mode == "cubic" && (node.op_type == "Upsample" || opset < 11))
    fail(node.where() + ": mode 'cubic' needs Resize opset 11+");
  const bool legacy = node.op_type == "Upsample" || opset < 11;
  p.ctm = legacy ? "asymmetric" : node.attr_string("coordinate_transformation_mode", "half_pixel");
  p.nearest_mode = legacy ? "floor" : node.attr_string("nearest_mode", "round_prefer_floor");
  const std::vector<std::string> known = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                          "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (std::find(known.begin(), known.end(), p.ctm) == known.end())
    fail_unsupported(node.where() + ": coordinate_transformation_mode '" + p.ctm + "' is not supported");
  if (p.nearest_mode != "round_prefer_floor" && p.nearest_mode != "round_prefer_ceil" &&
      p.nearest_mode != "floor" && p.nearest_mode != "ceil")
    fail(node.where() + ": unknown nearest_mode '" + p.nearest_mode + "'");
  p.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  p.extrapolation = node.attr_float("extrapolation_value", 0.f);
  if (node.attr_int("antialias", 0) != 0)
    fail_unsupported(node.where() + ": antialias=1 is not supported");
  return p;
}

// Input positions of scales / sizes / roi for this op and opset (-1: none).
struct Slots {
  int roi = -1, scales = -1, sizes = -1;
};
Slots slots(const ir::Node& node, int64_t opset) {
  if (node.op_type == "Upsample") return {-1, opset >= 9 ? 1 : -1, -1};
  if (opset < 11) return {-1, 1, -1};
  return {1, 2, 3};
}

// Per-axis output size and coordinate scale, from scales or sizes over `axes`.
struct Plan {
  Shape out;
  std::vector<double> scale;
  std::vector<double> length;  // unrounded output length for coordinate transforms
};

// scales/sizes given for the listed axes only (opset 18 `axes`); expand to all axes.
std::vector<int64_t> axes_of(const ir::Node& node, int64_t r) {
  std::vector<int64_t> axes = node.attr_ints("axes");
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  for (auto& a : axes) a = normalize_axis(a, r, node);
  return axes;
}

Plan make_plan(const Shape& in, const std::vector<double>* scales, const std::vector<int64_t>* sizes,
               const ir::Node& node) {
  const int64_t r = static_cast<int64_t>(in.size());
  const auto axes = axes_of(node, r);
  Plan p{in, std::vector<double>(in.size(), 1.0), {}};
  if (sizes) {
    if (sizes->size() != axes.size())
      fail(node.where() + ": sizes has " + std::to_string(sizes->size()) + " values for " +
           std::to_string(axes.size()) + " axes");
    const std::string policy = node.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      for (size_t i = 0; i < axes.size(); ++i) {
        const size_t a = static_cast<size_t>(axes[i]);
        if ((*sizes)[i] < 0) fail(node.where() + ": negative size");
        p.out[a] = (*sizes)[i];
        p.scale[a] = in[a] ? static_cast<double>(p.out[a]) / static_cast<double>(in[a]) : 1.0;
      }
    } else if (policy == "not_larger" || policy == "not_smaller") {
      double s = policy == "not_larger" ? 1e300 : 0;
      for (size_t i = 0; i < axes.size(); ++i) {
        const double v = static_cast<double>((*sizes)[i]) / static_cast<double>(in[static_cast<size_t>(axes[i])]);
        s = policy == "not_larger" ? std::min(s, v) : std::max(s, v);
      }
      for (int64_t a : axes) {
        p.out[static_cast<size_t>(a)] = static_cast<int64_t>(std::nearbyint(s * static_cast<double>(in[static_cast<size_t>(a)])));
        p.scale[static_cast<size_t>(a)] = s;
      }
    } else {
      fail(node.where() + ": unknown keep_aspect_ratio_policy '" + policy + "'");
    }
  } else if (scales) {
    if (scales->size() != axes.size())
      fail(node.where() + ": scales has " + std::to_string(scales->size()) + " values for " +
           std::to_string(axes.size()) + " axes");
    for (size_t i = 0; i < axes.size(); ++i) {
      const size_t a = static_cast<size_t>(axes[i]);
      if (!((*scales)[i] > 0)) fail(node.where() + ": scales must be positive");
      p.scale[a] = (*scales)[i];
      p.out[a] = static_cast<int64_t>(std::floor(static_cast<double>(in[a]) * (*scales)[i]));
    }
  } else {
    fail(node.where() + ": one of scales and sizes is required");
  }
  for (size_t a = 0; a < in.size(); ++a)
    p.length.push_back(sizes ? static_cast<double>(p.out[a]) : static_cast<double>(in[a]) * p.scale[a]);
  return p;
}

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.value_as_double(static_cast<int64_t>(i));
  return v;
}

// Original coordinate of output index x along an axis. As in the ONNX reference, the output
// length here is in * scale unrounded (align_corners downsampling depends on it).
double source_coord(double x, int64_t in, double out, double scale, const std::string& ctm,
                    double roi_start, double roi_end) {
  if (ctm == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (ctm == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (ctm == "align_corners")
    return out == 1 ? 0.0 : x * static_cast<double>(in - 1) / (out - 1);
  if (ctm == "asymmetric") return x / scale;
  if (ctm == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  // tf_crop_and_resize
  const double span = static_cast<double>(in - 1);
  if (out != 1) return roi_start * span + x * (roi_end - roi_start) * span / (out - 1);
  return 0.5 * (roi_start + roi_end) * span;
}

// Taps of one output position: input indices (clamped) and weights; empty = extrapolate.
struct Taps {
  std::vector<int64_t> idx;
  std::vector<double> w;
};

Taps taps_for(double x, int64_t in, const Params& p) {
  Taps t;
  if (p.ctm == "tf_crop_and_resize" && (x < 0 || x > static_cast<double>(in - 1))) return t;
  const auto clampi = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  const double fl = std::floor(x);
  const int64_t base = static_cast<int64_t>(fl);
  const double r = x - fl;
  if (p.mode == "nearest") {
    int64_t n;
    if (r == 0) n = base;
    else if (p.nearest_mode == "round_prefer_floor") n = r <= 0.5 ? base : base + 1;
    else if (p.nearest_mode == "round_prefer_ceil") n = r < 0.5 ? base : base + 1;
    else if (p.nearest_mode == "floor") n = base;
    else n = base + 1;
    t.idx = {clampi(n)};
    t.w = {1.0};
    return t;
  }
  std::vector<int64_t> raw;
  if (p.mode == "linear") {
    raw = {base, base + 1};
    t.w = {1 - r, r};
  } else {
    const double A = p.cubic_a;
    auto far = [&](double d) { return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A; };   // 1 < d < 2
    auto near = [&](double d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };        // d <= 1
    raw = {base - 1, base, base + 1, base + 2};
    t.w = {far(r + 1), near(r), near(1 - r), far(2 - r)};
  }
  if (p.exclude_outside) {
    double sum = 0;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] < 0 || raw[i] >= in) t.w[i] = 0;
      sum += t.w[i];
    }
    if (sum != 0)
      for (auto& w : t.w) w /= sum;
  }
  for (int64_t i : raw) t.idx.push_back(clampi(i));
  return t;
}

// Roi [start, end] per axis (defaults 0, 1).
std::vector<std::pair<double, double>> roi_of(const KernelContext& c, const Slots& s, size_t r,
                                              const Params& p) {
  std::vector<std::pair<double, double>> roi(r, {0.0, 1.0});
  if (p.ctm != "tf_crop_and_resize" || s.roi < 0 || !c.has(static_cast<size_t>(s.roi))) return roi;
  const auto v = to_doubles(c.in(static_cast<size_t>(s.roi)));
  const auto axes = axes_of(c.node, static_cast<int64_t>(r));
  if (v.size() != 2 * axes.size()) fail(c.node.where() + ": roi must have 2 values per axis");
  for (size_t i = 0; i < axes.size(); ++i) roi[static_cast<size_t>(axes[i])] = {v[i], v[i + axes.size()]};
  return roi;
}

// One separable pass along `axis` on a double tensor.
Tensor resize_axis(const Tensor& x, size_t axis, int64_t out_len, const std::vector<Taps>& taps,
                   double extrapolation) {
  Shape s = x.shape();
  const int64_t in_len = s[axis];
  s[axis] = out_len;
  Tensor out(DType::Float64, s);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  const double* src = x.data<double>();
  double* dst = out.data<double>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < out_len; ++j) {
      double* drow = dst + (o * out_len + j) * inner;
      const Taps& t = taps[static_cast<size_t>(j)];
      if (t.idx.empty()) {
        for (int64_t k = 0; k < inner; ++k) drow[k] = extrapolation;
        continue;
      }
      for (size_t q = 0; q < t.idx.size(); ++q) {
        const double w = t.w[q];
        if (w == 0) continue;
        const double* srow = src + (o * in_len + t.idx[q]) * inner;
        for (int64_t k = 0; k < inner; ++k) drow[k] += w * srow[k];
      }
    }
  return out;
}

// Scales and sizes from the node's inputs / attributes (kernel side).
void read_scales_sizes(const KernelContext& c, const Slots& s, std::optional<std::vector<double>>& scales,
                       std::optional<std::vector<int64_t>>& sizes) {
  if (c.node.op_type == "Upsample" && c.opset < 9) {
    auto f = c.node.attr_floats("scales");
    scales = std::vector<double>(f.begin(), f.end());
    return;
  }
  if (s.sizes >= 0 && c.has(static_cast<size_t>(s.sizes)) && c.in(static_cast<size_t>(s.sizes)).numel() > 0)
    sizes = c.in(static_cast<size_t>(s.sizes)).to_int_vector();
  else if (s.scales >= 0 && c.has(static_cast<size_t>(s.scales)) && c.in(static_cast<size_t>(s.scales)).numel() > 0)
    scales = to_doubles(c.in(static_cast<size_t>(s.scales)));
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  params(c.node, c.opset);
  if (!x.has_shape) {
    c.out(0) = unknown_rank(x.dtype);
    return;
  }
  const Slots s = slots(c.node, c.opset);
  std::optional<std::vector<double>> scales;
  std::optional<std::vector<int64_t>> sizes;
  bool unknown = false;
  auto value = [&](int i) -> const Tensor* {
    if (i < 0 || !c.has(static_cast<size_t>(i))) return nullptr;
    const Tensor* v = static_cast<size_t>(i) < c.input_values.size() ? c.input_values[static_cast<size_t>(i)] : nullptr;
    if (!v) {
      // absent value: unknown unless the type says the tensor is empty
      if (static_length(c, static_cast<size_t>(i)) != 0) unknown = true;
      return nullptr;
    }
    return v->numel() > 0 ? v : nullptr;
  };
  if (c.node.op_type == "Upsample" && c.opset < 9) {
    auto f = c.node.attr_floats("scales");
    scales = std::vector<double>(f.begin(), f.end());
  } else {
    if (const Tensor* v = value(s.sizes)) sizes = v->to_int_vector();
    else if (const Tensor* w = value(s.scales)) scales = to_doubles(*w);
  }
  // Static output needs a known plan; a static input is needed for scales.
  if (!unknown && (sizes || scales)) {
    std::vector<ir::Dim> dims = x.dims;
    Shape probe;
    for (auto& d : x.dims) probe.push_back(d.is_static() ? d.value : 1);
    Plan p = make_plan(probe, scales ? &*scales : nullptr, sizes ? &*sizes : nullptr, c.node);
    const auto axes = axes_of(c.node, rank_of(x));
    for (int64_t a : axes) {
      const size_t i = static_cast<size_t>(a);
      const bool identity = p.scale[i] == 1.0 && !sizes;
      if (x.dims[i].is_static() || sizes) dims[i] = ir::Dim{p.out[i], ""};
      else if (!identity) dims[i] = ir::Dim{};
    }
    if (sizes && c.node.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch" && !x.is_static())
      dims = unknown_dims(x.dims.size());
    c.out(0) = make_type(x.dtype, dims);
    return;
  }
  c.out(0) = make_type(x.dtype, unknown_dims(x.dims.size()));
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  const Params p = params(c.node, c.opset);
  const Slots s = slots(c.node, c.opset);
  std::optional<std::vector<double>> scales;
  std::optional<std::vector<int64_t>> sizes;
  read_scales_sizes(c, s, scales, sizes);
  const Plan plan = make_plan(x.shape(), scales ? &*scales : nullptr, sizes ? &*sizes : nullptr, c.node);
  checked_nbytes(x.dtype(), plan.out, c.node.where());  // before the taps, which are as long as the output's dims
  const auto roi = roi_of(c, s, x.shape().size(), p);
  const size_t r = x.shape().size();
  // taps per axis
  std::vector<std::vector<Taps>> taps(r);
  std::vector<bool> active(r, false);
  for (size_t a = 0; a < r; ++a) {
    const int64_t in = x.shape()[a], out = plan.out[a];
    active[a] = in != out || plan.scale[a] != 1.0 || p.ctm == "tf_crop_and_resize";
    if (!active[a]) continue;
    if (in == 0 && out > 0) fail(c.node.where() + ": cannot resize an empty axis");
    for (int64_t j = 0; j < out; ++j) {
      const double xs = source_coord(static_cast<double>(j), in, plan.length[a], plan.scale[a], p.ctm, roi[a].first, roi[a].second);
      taps[a].push_back(taps_for(xs, in, p));
    }
  }
  if (p.mode == "nearest") {
    std::vector<std::vector<int64_t>> maps(r);
    for (size_t a = 0; a < r; ++a) {
      for (int64_t j = 0; j < plan.out[a]; ++j) {
        if (!active[a]) maps[a].push_back(j);
        else maps[a].push_back(taps[a][static_cast<size_t>(j)].idx.empty() ? -1 : taps[a][static_cast<size_t>(j)].idx[0]);
      }
    }
    const Tensor fill = Tensor::scalar<double>(p.extrapolation).cast(x.dtype());
    c.outputs[0] = mapped_copy(x, plan.out, maps, &fill);
    return;
  }
  if (!is_floating(x.dtype()))
    fail_unsupported(c.node.where() + ": mode '" + p.mode + "' on dtype " + dtype_name(x.dtype()));
  Tensor cur = x.cast(DType::Float64);
  for (size_t a = 0; a < r; ++a)
    if (active[a]) cur = resize_axis(cur, a, plan.out[a], taps[a], p.extrapolation);
  c.outputs[0] = cur.cast(x.dtype());
}

std::string check(const ir::Node& node, int64_t opset) {
  try {
    params(node, opset);
  } catch (const Error& e) {
    if (e.kind() == Error::Kind::Unsupported) return e.what();
  }
  return "";
}

}  // namespace

extern const OpDef kOpResize;
const OpDef kOpResize{"Resize", "", 1, 4, infer, run, data_movement_cost, check};
extern const OpDef kOpUpsample;
const OpDef kOpUpsample{"Upsample", "", 1, 2, infer, run, data_movement_cost, check};

}  // namespace joule::ops
