#pragma once
// Geometry shared by Conv, ConvTranspose and the pooling ops: reading kernel_shape / strides /
// dilations / pads / auto_pad, resolving pads and computing output spatial sizes.
// Sizes of -1 mean "unknown" (inference on symbolic shapes); the helpers propagate them.
#include <algorithm>
#include <string>
#include <vector>

#include "joule/ops/util.h"

namespace joule::ops {

enum class AutoPad { NotSet, SameUpper, SameLower, Valid };

// Makes float conv `n` (Conv or joule FusedConv) a FusedConv with `channels_last` (N,H,W,C
// input, residual and output); a Conv gets an empty epilogue. Types are the caller's business.
inline void make_channels_last(ir::Node& n) {
  if (n.op_type == "Conv") {
    n.op_type = "FusedConv";
    n.domain = "joule";
    n.attrs["activation"] = std::string();
    n.attrs["activation_params"] = std::vector<float>{};
  }
  n.attrs["channels_last"] = int64_t{1};
}

inline AutoPad parse_auto_pad(const ir::Node& n) {
  const std::string s = n.attr_string("auto_pad", "NOTSET");
  if (s == "NOTSET" || s.empty()) return AutoPad::NotSet;
  if (s == "SAME_UPPER") return AutoPad::SameUpper;
  if (s == "SAME_LOWER") return AutoPad::SameLower;
  if (s == "VALID") return AutoPad::Valid;
  fail(n.where() + ": unknown auto_pad '" + s + "'");
}

// Integer division rounding toward -inf / +inf (b > 0).
inline int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && a < 0) --q;
  return q;
}
inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

struct ConvGeometry {
  int nsp = 0;                     // number of spatial dims
  std::vector<int64_t> kernel;     // -1: unknown (inference only)
  std::vector<int64_t> strides;    // all > 0
  std::vector<int64_t> dilations;  // all > 0
  std::vector<int64_t> pads;       // [begin_0..begin_{n-1}, end_0..end_{n-1}] (attribute)
  AutoPad auto_pad = AutoPad::NotSet;
  bool ceil_mode = false;

  // Extent of the dilated kernel, -1 when unknown.
  int64_t eff_kernel(int i) const {
    return kernel[i] < 0 ? -1 : (kernel[i] - 1) * dilations[i] + 1;
  }
};

// Reads the geometry attributes of a node with `nsp` spatial dims. `w_kernel`: the weight's
// spatial dims (-1 unknown), empty for pools (kernel_shape is then required).
inline ConvGeometry read_conv_geometry(const ir::Node& n, int nsp,
                                       const std::vector<int64_t>& w_kernel) {
  if (nsp < 1) fail(n.where() + ": input needs at least one spatial dimension");
  ConvGeometry g;
  g.nsp = nsp;
  const size_t ns = static_cast<size_t>(nsp);
  auto check_len = [&](const std::vector<int64_t>& v, size_t want, const char* name) {
    if (v.size() != want)
      fail(n.where() + ": attribute '" + name + "' has " + std::to_string(v.size()) +
           " values, expected " + std::to_string(want));
  };
  if (n.has_attr("kernel_shape")) {
    g.kernel = n.attr_ints("kernel_shape");
    check_len(g.kernel, ns, "kernel_shape");
    for (int64_t k : g.kernel)
      if (k <= 0) fail(n.where() + ": kernel_shape values must be positive");
    if (!w_kernel.empty())
      for (size_t i = 0; i < ns; ++i)
        if (w_kernel[i] >= 0 && w_kernel[i] != g.kernel[i])
          fail(n.where() + ": kernel_shape " + shape_str(g.kernel) +
               " does not match the weight's spatial shape");
  } else {
    if (w_kernel.empty()) fail(n.where() + ": attribute 'kernel_shape' is required");
    g.kernel = w_kernel;
  }
  g.strides = n.attr_ints("strides", std::vector<int64_t>(ns, 1));
  check_len(g.strides, ns, "strides");
  g.dilations = n.attr_ints("dilations", std::vector<int64_t>(ns, 1));
  check_len(g.dilations, ns, "dilations");
  for (size_t i = 0; i < ns; ++i)
    if (g.strides[i] <= 0 || g.dilations[i] <= 0)
      fail(n.where() + ": strides and dilations must be positive");
  g.pads = n.attr_ints("pads", std::vector<int64_t>(2 * ns, 0));
  check_len(g.pads, 2 * ns, "pads");
  for (int64_t p : g.pads)
    if (p < 0) fail(n.where() + ": pads must be non-negative");
  g.auto_pad = parse_auto_pad(n);
  g.ceil_mode = n.attr_int("ceil_mode", 0) != 0;
  return g;
}

// Output size of spatial dim i of a convolution / pool for input size `in` (-1 unknown), and
// the resolved pads. Windows that would start beyond the padded input (ceil_mode) are dropped.
// Throws when the input (plus pads) is smaller than the kernel.
inline int64_t conv_out_dim(const ConvGeometry& g, const ir::Node& n, int i, int64_t in,
                            int64_t* pad_b = nullptr, int64_t* pad_e = nullptr) {
  const int64_t s = g.strides[i], ek = g.eff_kernel(i);
  int64_t pb = 0, pe = 0, out = -1;
  if (g.auto_pad == AutoPad::SameUpper || g.auto_pad == AutoPad::SameLower) {
    if (in >= 0) out = ceil_div(in, s);
    if (in >= 0 && ek >= 0) {
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + ek - in);
      pb = g.auto_pad == AutoPad::SameUpper ? total / 2 : total - total / 2;
      pe = total - pb;
    }
  } else {
    if (g.auto_pad == AutoPad::NotSet) {
      pb = g.pads[i];
      pe = g.pads[g.nsp + i];
    }
    if (in >= 0 && ek >= 0) {
      const int64_t span = in + pb + pe - ek;
      if (span < 0)
        fail(n.where() + ": spatial dim " + std::to_string(i) + " of size " + std::to_string(in) +
             " (with pads) is smaller than the kernel extent " + std::to_string(ek));
      if (g.ceil_mode) {
        out = ceil_div(span, s) + 1;
        if ((out - 1) * s >= in + pb) --out;
      } else {
        out = span / s + 1;
      }
    }
  }
  if (pad_b) *pad_b = pb;
  if (pad_e) *pad_e = pe;
  return out;
}

// Concrete plan of a convolution / pool over up to 3 spatial dims, normalised to 3-D
// (leading dims of size 1, kernel 1, stride 1, no pad) so kernels need one code path.
struct SpatialPlan {
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
};

inline SpatialPlan make_spatial_plan(const ConvGeometry& g, const ir::Node& n,
                                     const Shape& in_spatial) {
  if (g.nsp > 3) fail_unsupported(n.where() + ": more than 3 spatial dimensions");
  SpatialPlan p;
  const int off = 3 - g.nsp;
  for (int j = 0; j < 3; ++j) {
    p.in[j] = p.out[j] = p.k[j] = p.s[j] = p.d[j] = 1;
    p.pb[j] = p.pe[j] = 0;
  }
  for (int i = 0; i < g.nsp; ++i) {
    const int j = off + i;
    p.in[j] = in_spatial[static_cast<size_t>(i)];
    p.out[j] = conv_out_dim(g, n, i, p.in[j], &p.pb[j], &p.pe[j]);
    p.k[j] = g.kernel[i];
    p.s[j] = g.strides[i];
    p.d[j] = g.dilations[i];
  }
  return p;
}

// The range [lo, hi) of output positions o for which o*s + koff - pb lies inside [0, in).
inline void valid_out_range(int64_t in, int64_t out, int64_t s, int64_t koff, int64_t pb,
                            int64_t* lo, int64_t* hi) {
  *lo = std::max<int64_t>(0, ceil_div(pb - koff, s));
  *hi = std::min<int64_t>(out, floor_div(in - 1 + pb - koff, s) + 1);
  if (*hi < *lo) *hi = *lo;
}

// ConvTranspose's scatter for one kernel offset (kd, kh, kw): each position i of the input plane
// `x` adds w * x[i] into the output plane `y` at i * stride + k * dilation - pad_begin, where
// that lies inside the output (the reference kernel and the gemm algorithm's col2im).
template <class T>
inline void scatter_kernel_offset(const SpatialPlan& p, int64_t kd, int64_t kh, int64_t kw, const T* x, T w, T* y) {
  int64_t id0, id1, ih0, ih1, iw0, iw1;
  valid_out_range(p.out[0], p.in[0], p.s[0], kd * p.d[0], p.pb[0], &id0, &id1);
  valid_out_range(p.out[1], p.in[1], p.s[1], kh * p.d[1], p.pb[1], &ih0, &ih1);
  valid_out_range(p.out[2], p.in[2], p.s[2], kw * p.d[2], p.pb[2], &iw0, &iw1);
  const int64_t sw = p.s[2], len = iw1 - iw0, ow0 = iw0 * sw + kw * p.d[2] - p.pb[2];
  for (int64_t id = id0; id < id1; ++id) {
    const int64_t od = id * p.s[0] + kd * p.d[0] - p.pb[0];
    for (int64_t ih = ih0; ih < ih1; ++ih) {
      const int64_t oh = ih * p.s[1] + kh * p.d[1] - p.pb[1];
      const T* xr = x + (id * p.in[1] + ih) * p.in[2] + iw0;
      T* yr = y + (od * p.out[1] + oh) * p.out[2] + ow0;
      for (int64_t j = 0; j < len; ++j) yr[j * sw] += w * xr[j];
    }
  }
}

// Spatial dims of an inference type from index 2 on (-1 for symbolic ones).
inline std::vector<int64_t> spatial_dims(const ir::TensorType& t) {
  std::vector<int64_t> r;
  for (size_t i = 2; i < t.dims.size(); ++i)
    r.push_back(t.dims[i].is_static() ? t.dims[i].value : -1);
  return r;
}

// Output spatial dims for inference: static when the input dim is static; a symbolic input
// dim passes through when the op maps sizes to themselves (stride 1 and SAME padding, or a
// 1-wide kernel without pads); otherwise unknown.
inline std::vector<ir::Dim> conv_out_dims(const ConvGeometry& g, const ir::Node& n,
                                          const ir::TensorType& x) {
  std::vector<ir::Dim> r;
  for (int i = 0; i < g.nsp; ++i) {
    const ir::Dim& d = x.dims[static_cast<size_t>(i) + 2];
    if (d.is_static()) {
      const int64_t o = conv_out_dim(g, n, i, d.value);
      r.push_back(o >= 0 ? ir::Dim{o, ""} : ir::Dim{});
      continue;
    }
    const bool same = g.auto_pad == AutoPad::SameUpper || g.auto_pad == AutoPad::SameLower;
    const bool no_pad =
        g.auto_pad == AutoPad::Valid || (g.pads[i] == 0 && g.pads[g.nsp + i] == 0) || same;
    const bool identity = g.strides[i] == 1 && (same || (g.eff_kernel(i) == 1 && no_pad));
    r.push_back(identity ? d : ir::Dim{});
  }
  return r;
}

// ConvTranspose: output size of spatial dim i for input size `in` (-1 unknown) and resolved
// pads (pad_e may be negative: the output then extends past the last input contribution).
// `output_padding` / `output_shape` (-1: not given) are the op's attributes for dim i.
// With output_shape or SAME auto_pad the total padding s*(in-1) + output_padding + ek - out is
// split with the larger half at the end for SAME_UPPER / at the start otherwise (ONNX spec).
inline int64_t conv_transpose_out_dim(const ConvGeometry& g, const ir::Node& n, int i, int64_t in,
                                      int64_t output_padding, int64_t output_shape,
                                      int64_t* pad_b = nullptr, int64_t* pad_e = nullptr) {
  const int64_t s = g.strides[i], ek = g.eff_kernel(i);
  int64_t pb = 0, pe = 0, out = -1;
  const bool same = g.auto_pad == AutoPad::SameUpper || g.auto_pad == AutoPad::SameLower;
  if (output_shape >= 0 || same) {
    out = output_shape >= 0 ? output_shape : (in >= 0 ? in * s : -1);
    if (in >= 0 && ek >= 0 && out >= 0) {
      const int64_t total = s * (in - 1) + output_padding + ek - out;
      const int64_t half = floor_div(total, 2);
      if (g.auto_pad == AutoPad::SameUpper) {
        pb = half;
        pe = total - half;
      } else {
        pb = total - half;
        pe = half;
      }
    }
  } else {
    if (g.auto_pad == AutoPad::NotSet) {
      pb = g.pads[i];
      pe = g.pads[g.nsp + i];
    }
    if (in >= 0 && ek >= 0) {
      out = s * (in - 1) + output_padding + ek - pb - pe;
      if (out < 0)
        fail(n.where() + ": pads exceed the output size of spatial dim " + std::to_string(i));
    }
  }
  if (pad_b) *pad_b = pb;
  if (pad_e) *pad_e = pe;
  return out;
}

// Dim i of a type when static, -1 otherwise.
inline int64_t static_dim_or(const ir::TensorType& t, size_t i) {
  return t.has_shape && i < t.dims.size() && t.dims[i].is_static() ? t.dims[i].value : -1;
}

// Rank checks shared by Conv and ConvTranspose kernels: X is [N, C, spatial...] and W has
// the same rank. Returns the number of spatial dims.
inline int check_conv_operands(const KernelContext& c, const Tensor& X, const Tensor& W) {
  if (X.rank() < 3) fail(c.node.where() + ": input rank " + std::to_string(X.rank()) + " < 3");
  if (W.rank() != X.rank())
    fail(c.node.where() + ": weight " + W.describe() + " does not match input " + X.describe());
  return X.rank() - 2;
}

// ConvTranspose on concrete operands (ops/conv_transpose.cpp; its fast algorithm uses it too):
// X, W and B checked, the spatial plan (3-D, leading unit dims) and the output shape.
struct ConvTransposePlan {
  SpatialPlan p;
  int64_t group = 1;
  Shape out;
};
ConvTransposePlan plan_conv_transpose(const KernelContext& c);

}  // namespace joule::ops
