// Conv: 1-D/2-D/3-D convolution with strides, pads, dilations, groups and auto_pad.
// Reference kernel: parallel over (batch, output channel); for each kernel tap and group of 4
// input channels the output plane is updated with the output-width loop innermost and contiguous.
#include "joule/ops/conv_util.h"
#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

struct ConvSetup {
  ConvGeometry g;
  int64_t group = 1;
};

ConvSetup read_setup(const ir::Node& n, int nsp, const std::vector<int64_t>& w_kernel) {
  ConvSetup s;
  s.g = read_conv_geometry(n, nsp, w_kernel);
  s.g.ceil_mode = false;
  s.group = n.attr_int("group", 1);
  if (s.group <= 0) fail(n.where() + ": group must be positive");
  return s;
}

void check_channels(const ir::Node& n, int64_t c_in, int64_t w_c, int64_t m, int64_t group) {
  if (c_in >= 0 && w_c >= 0 && c_in != w_c * group)
    fail(n.where() + ": input has " + std::to_string(c_in) + " channels but the weight expects " +
         std::to_string(w_c) + " x group " + std::to_string(group));
  if (m >= 0 && m % group != 0)
    fail(n.where() + ": " + std::to_string(m) + " output channels not divisible by group " +
         std::to_string(group));
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  const ir::TensorType& w = c.in(1);
  ir::TensorType& o = c.out(0);
  o = ir::TensorType{};
  o.dtype = x.dtype;
  if (!x.has_shape) return;
  const size_t r = x.dims.size();
  if (r < 3) fail(c.node.where() + ": input rank " + std::to_string(r) + " < 3");
  if (w.has_shape && w.dims.size() != r)
    fail(c.node.where() + ": weight rank " + std::to_string(w.dims.size()) + " != input rank " +
         std::to_string(r));
  const int nsp = static_cast<int>(r) - 2;
  const std::vector<int64_t> wk =
      w.has_shape ? spatial_dims(w) : std::vector<int64_t>(static_cast<size_t>(nsp), -1);
  ConvSetup s = read_setup(c.node, nsp, wk);
  check_channels(c.node, static_dim_or(x, 1), static_dim_or(w, 1), static_dim_or(w, 0), s.group);
  if (c.has(2)) {
    const ir::TensorType& b = c.in(2);
    if (b.has_shape && b.dims.size() != 1) fail(c.node.where() + ": bias must be 1-D");
  }
  o.has_shape = true;
  o.dims.push_back(x.dims[0]);
  o.dims.push_back(w.has_shape ? w.dims[0] : ir::Dim{});
  for (const ir::Dim& d : conv_out_dims(s.g, c.node, x)) o.dims.push_back(d);
}

// Adds the contributions of CH input channels (planes xs[c], weights ws[c] of the same
// output channel) to the output plane y. The kernel taps' valid output ranges are the same for
// every input channel, so CH channels share one pass over each output row.
template <class T, int CH>
void accumulate_channels(const T* const* xs, const T* const* ws, T* y, const SpatialPlan& p) {
  static_assert(CH == 1 || CH == 4);
  for (int64_t kd = 0; kd < p.k[0]; ++kd) {
    int64_t od0, od1;
    valid_out_range(p.in[0], p.out[0], p.s[0], kd * p.d[0], p.pb[0], &od0, &od1);
    for (int64_t kh = 0; kh < p.k[1]; ++kh) {
      int64_t oh0, oh1;
      valid_out_range(p.in[1], p.out[1], p.s[1], kh * p.d[1], p.pb[1], &oh0, &oh1);
      for (int64_t kw = 0; kw < p.k[2]; ++kw) {
        int64_t ow0, ow1;
        valid_out_range(p.in[2], p.out[2], p.s[2], kw * p.d[2], p.pb[2], &ow0, &ow1);
        const int64_t tap = (kd * p.k[1] + kh) * p.k[2] + kw;
        T wv[CH];
        for (int c = 0; c < CH; ++c) wv[c] = ws[c][tap];
        const int64_t len = ow1 - ow0, sw = p.s[2];
        const int64_t iw0 = ow0 * sw + kw * p.d[2] - p.pb[2];
        for (int64_t od = od0; od < od1; ++od) {
          const int64_t id = od * p.s[0] + kd * p.d[0] - p.pb[0];
          for (int64_t oh = oh0; oh < oh1; ++oh) {
            const int64_t ih = oh * p.s[1] + kh * p.d[1] - p.pb[1];
            T* yr = y + (od * p.out[1] + oh) * p.out[2] + ow0;
            const int64_t xoff = (id * p.in[1] + ih) * p.in[2] + iw0;
            if constexpr (CH == 4) {
              const T *x0 = xs[0] + xoff, *x1 = xs[1] + xoff, *x2 = xs[2] + xoff,
                      *x3 = xs[3] + xoff;
              const T w0 = wv[0], w1 = wv[1], w2 = wv[2], w3 = wv[3];
              if (sw == 1) {
                for (int64_t j = 0; j < len; ++j)
                  yr[j] += w0 * x0[j] + w1 * x1[j] + w2 * x2[j] + w3 * x3[j];
              } else {
                for (int64_t j = 0, q = 0; j < len; ++j, q += sw)
                  yr[j] += w0 * x0[q] + w1 * x1[q] + w2 * x2[q] + w3 * x3[q];
              }
            } else {
              const T* x0 = xs[0] + xoff;
              const T w0 = wv[0];
              if (sw == 1) {
                for (int64_t j = 0; j < len; ++j) yr[j] += w0 * x0[j];
              } else {
                for (int64_t j = 0, q = 0; j < len; ++j, q += sw) yr[j] += w0 * x0[q];
              }
            }
          }
        }
      }
    }
  }
}

template <class T>
void conv_kernel(const Tensor& X, const Tensor& W, const Tensor* B, Tensor& Y, const SpatialPlan& p,
                 int64_t group, ThreadPool* pool) {
  const int64_t N = X.dim(0), C = X.dim(1), M = W.dim(0);
  const int64_t cg = C / group, mg = M / group;
  const int64_t in_plane = p.in_size(), out_plane = p.out_size(), kvol = p.k_size();
  const T* x = X.data<T>();
  const T* w = W.data<T>();
  const T* b = B ? B->data<T>() : nullptr;
  T* y = Y.data<T>();
  constexpr int kChannels = 4;
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / M, m = t % M, g = m / mg;
      T* yp = y + t * out_plane;
      const T bias = b ? b[m] : T(0);
      for (int64_t i = 0; i < out_plane; ++i) yp[i] = bias;
      const T* xs[kChannels];
      const T* ws[kChannels];
      int64_t ic = 0;
      for (; ic + kChannels <= cg; ic += kChannels) {
        for (int c = 0; c < kChannels; ++c) {
          xs[c] = x + (n * C + g * cg + ic + c) * in_plane;
          ws[c] = w + (m * cg + ic + c) * kvol;
        }
        accumulate_channels<T, kChannels>(xs, ws, yp, p);
      }
      for (; ic < cg; ++ic) {
        xs[0] = x + (n * C + g * cg + ic) * in_plane;
        ws[0] = w + (m * cg + ic) * kvol;
        accumulate_channels<T, 1>(xs, ws, yp, p);
      }
    }
  };
  parallel_or_serial(pool, N * M, body);
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  const Tensor& X = c.in(0);
  const Tensor& W = c.in(1);
  const Tensor* B = c.has(2) ? c.inputs[2] : nullptr;
  nn::check_same_dtypes(c, 0, 3);
  const int nsp = check_conv_operands(c, X, W);
  const Shape xs(X.shape().begin() + 2, X.shape().end());
  const Shape wk(W.shape().begin() + 2, W.shape().end());
  ConvSetup s = read_setup(c.node, nsp, wk);
  check_channels(c.node, X.dim(1), W.dim(1), W.dim(0), s.group);
  if (B && (B->rank() != 1 || B->dim(0) != W.dim(0)))
    fail(c.node.where() + ": bias " + B->describe() + " does not match " +
         std::to_string(W.dim(0)) + " output channels");
  const SpatialPlan p = make_spatial_plan(s.g, c.node, xs);
  Shape ys = {X.dim(0), W.dim(0)};
  for (int i = 0; i < nsp; ++i) ys.push_back(p.out[3 - nsp + i]);
  Tensor Y(X.dtype(), ys);
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    conv_kernel<T>(X, W, B, Y, p, s.group, c.pool);
  });
  c.outputs[0] = Y;
}

Cost cost(const CostContext& c) {
  Cost r;
  if (c.in.size() >= 2 && c.in[1].size() >= 1 && !c.out.empty() && c.in[1][0] > 0) {
    // MACs = N*M*out_spatial * (C/group) * kernel volume = out numel * W numel / M
    r.macs = nn::numel_d(c.out[0]) * nn::numel_d(c.in[1]) / static_cast<double>(c.in[1][0]);
    const bool bias =
        c.in.size() >= 3 && c.in_types.size() >= 3 && c.in_types[2] != DType::Undefined;
    r.flops = 2 * r.macs + (bias ? nn::numel_d(c.out[0]) : 0);
  }
  r.bytes = io_bytes(c);
  return r;
}

std::string check(const ir::Node& n, int64_t) {
  const std::string ap = n.attr_string("auto_pad", "NOTSET");
  if (ap != "NOTSET" && ap != "" && ap != "SAME_UPPER" && ap != "SAME_LOWER" && ap != "VALID")
    return "auto_pad '" + ap + "'";
  return "";
}

}  // namespace

extern const OpDef kOpConv;
const OpDef kOpConv{"Conv", "", 2, 3, infer, run, cost, check};

}  // namespace joule::ops
