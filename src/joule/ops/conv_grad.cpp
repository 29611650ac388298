// The gradients of Conv (joule domain), with the forward node's attributes (kernel_shape,
// strides, dilations, pads, auto_pad, group):
//   joule.ConvGradData(dY, W; input_shape) -> dX
//     dX[n, c, i] = sum over m of c's group and taps k with i = o*s + k*d - pad: dY[n, m, o] * W[m, c', k]
//   joule.ConvGradWeight(X, dY; weight_shape) -> dW (, dB)
//     dW[m, c', k] = sum over n, o: dY[n, m, o] * X[n, c, o*s + k*d - pad];  dB[m] = sum over n, o of dY
// Reference kernels (the oracle of kernels/conv_grad algorithms): plain loops, accumulation in
// double, parallel over input channels (data) and weights (weight).
#include "joule/ops/conv_util.h"
#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

Shape shape_attr(const ir::Node& n, const char* name) {
  if (!n.has_attr(name)) fail(n.where() + ": attribute " + name + " is required");
  return n.attr_ints(name);
}

// The forward plan: input spatial dims from the input shape, kernel from the weight shape.
SpatialPlan plan(const ir::Node& n, const Shape& x, const Shape& w) {
  if (x.size() < 3 || w.size() != x.size())
    fail(n.where() + ": input " + shape_str(x) + " and weight " + shape_str(w) + " do not make a convolution");
  const int nsp = static_cast<int>(x.size()) - 2;
  const ConvGeometry g = read_conv_geometry(n, nsp, Shape(w.begin() + 2, w.end()));
  return make_spatial_plan(g, n, Shape(x.begin() + 2, x.end()));
}

struct Dims {
  int64_t n, c, m, group, cg, mg;
};

Dims dims_of(const ir::Node& node, const Shape& x, const Shape& w) {
  const int64_t group = node.attr_int("group", 1);
  Dims d{x[0], x[1], w[0], group, x[1] / group, w[0] / group};
  if (group <= 0 || x[1] % group || w[0] % group || w[1] * group != x[1])
    fail(node.where() + ": input " + shape_str(x) + " and weight " + shape_str(w) + " do not match group " +
         std::to_string(group));
  return d;
}

void check_dy(const ir::Node& node, const Tensor& dy, const Dims& d, const SpatialPlan& p, int nsp) {
  Shape want = {d.n, d.m};
  for (int i = 0; i < nsp; ++i) want.push_back(p.out[3 - nsp + i]);
  if (dy.shape() != want) fail(node.where() + ": dY " + dy.describe() + " does not match the output " + shape_str(want));
}

// Calls f(o, i) for every (output, input) spatial position pair of kernel tap (kd, kh, kw).
template <class F>
inline void for_each_tap_pair(const SpatialPlan& p, int64_t kd, int64_t kh, int64_t kw, F f) {
  int64_t od0, od1, oh0, oh1, ow0, ow1;
  valid_out_range(p.in[0], p.out[0], p.s[0], kd * p.d[0], p.pb[0], &od0, &od1);
  valid_out_range(p.in[1], p.out[1], p.s[1], kh * p.d[1], p.pb[1], &oh0, &oh1);
  valid_out_range(p.in[2], p.out[2], p.s[2], kw * p.d[2], p.pb[2], &ow0, &ow1);
  for (int64_t od = od0; od < od1; ++od) {
    const int64_t id = od * p.s[0] + kd * p.d[0] - p.pb[0];
    for (int64_t oh = oh0; oh < oh1; ++oh) {
      const int64_t ih = oh * p.s[1] + kh * p.d[1] - p.pb[1];
      const int64_t o = (od * p.out[1] + oh) * p.out[2], i = (id * p.in[1] + ih) * p.in[2];
      for (int64_t ow = ow0; ow < ow1; ++ow) f(o + ow, i + ow * p.s[2] + kw * p.d[2] - p.pb[2]);
    }
  }
}

void infer_data(InferContext& c) {
  ir::TensorType& o = c.out(0);
  o.dtype = c.in(0).dtype;
  o.has_shape = true;
  o.dims.clear();
  for (int64_t v : shape_attr(c.node, "input_shape")) o.dims.push_back(ir::Dim{v, ""});
}

void run_data(KernelContext& c) {
  const Tensor& dY = c.in(0);
  const Tensor& W = c.in(1);
  const Shape xs = shape_attr(c.node, "input_shape");
  const SpatialPlan p = plan(c.node, xs, W.shape());
  const Dims d = dims_of(c.node, xs, W.shape());
  check_dy(c.node, dY, d, p, static_cast<int>(xs.size()) - 2);
  nn::check_same_dtypes(c, 0, 2);
  visit_floating(dY.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* dy = dY.data<T>();
    const T* w = W.data<T>();
    T* dx = c.output(0, dY.dtype(), xs).template data<T>();
    const int64_t in_plane = p.in_size(), out_plane = p.out_size(), kvol = p.k_size();
    parallel_or_serial(c.pool, d.n * d.c, [&](int64_t begin, int64_t end) {
      std::vector<double> acc(static_cast<size_t>(in_plane));
      for (int64_t t = begin; t < end; ++t) {
        const int64_t n = t / d.c, ch = t % d.c, g = ch / d.cg, ci = ch % d.cg;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t m = g * d.mg; m < (g + 1) * d.mg; ++m) {
          const T* dyp = dy + (n * d.m + m) * out_plane;
          const T* wp = w + (m * d.cg + ci) * kvol;
          for (int64_t kd = 0; kd < p.k[0]; ++kd)
            for (int64_t kh = 0; kh < p.k[1]; ++kh)
              for (int64_t kw = 0; kw < p.k[2]; ++kw) {
                const double wv = static_cast<double>(wp[(kd * p.k[1] + kh) * p.k[2] + kw]);
                for_each_tap_pair(p, kd, kh, kw, [&](int64_t o, int64_t i) { acc[i] += wv * static_cast<double>(dyp[o]); });
              }
        }
        T* dxp = dx + t * in_plane;
        for (int64_t i = 0; i < in_plane; ++i) dxp[i] = static_cast<T>(acc[i]);
      }
    });
  });
}

void infer_weight(InferContext& c) {
  ir::TensorType& o = c.out(0);
  o.dtype = c.in(0).dtype;
  o.has_shape = true;
  o.dims.clear();
  const Shape ws = shape_attr(c.node, "weight_shape");
  for (int64_t v : ws) o.dims.push_back(ir::Dim{v, ""});
  if (c.output_types.size() > 1) c.out(1) = ir::TensorType::of(c.in(0).dtype, {ws.at(0)});
}

void run_weight(KernelContext& c) {
  const Tensor& X = c.in(0);
  const Tensor& dY = c.in(1);
  const Shape ws = shape_attr(c.node, "weight_shape");
  const SpatialPlan p = plan(c.node, X.shape(), ws);
  const Dims d = dims_of(c.node, X.shape(), ws);
  check_dy(c.node, dY, d, p, X.rank() - 2);
  nn::check_same_dtypes(c, 0, 2);
  const bool want_bias = c.outputs.size() > 1 && !c.node.outputs[1].empty();
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = X.data<T>();
    const T* dy = dY.data<T>();
    T* dw = c.output(0, X.dtype(), ws).template data<T>();
    const int64_t in_plane = p.in_size(), out_plane = p.out_size(), kvol = p.k_size();
    parallel_or_serial(c.pool, d.m * d.cg, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t m = t / d.cg, ci = t % d.cg, ch = (m / d.mg) * d.cg + ci;
        for (int64_t kd = 0; kd < p.k[0]; ++kd)
          for (int64_t kh = 0; kh < p.k[1]; ++kh)
            for (int64_t kw = 0; kw < p.k[2]; ++kw) {
              double acc = 0;
              for (int64_t n = 0; n < d.n; ++n) {
                const T* dyp = dy + (n * d.m + m) * out_plane;
                const T* xp = x + (n * d.c + ch) * in_plane;
                for_each_tap_pair(p, kd, kh, kw, [&](int64_t o, int64_t i) {
                  acc += static_cast<double>(dyp[o]) * static_cast<double>(xp[i]);
                });
              }
              dw[t * kvol + (kd * p.k[1] + kh) * p.k[2] + kw] = static_cast<T>(acc);
            }
      }
    });
    if (want_bias) {
      T* db = c.output(1, X.dtype(), {d.m}).template data<T>();
      for (int64_t m = 0; m < d.m; ++m) {
        double s = 0;
        for (int64_t n = 0; n < d.n; ++n)
          for (int64_t o = 0; o < out_plane; ++o) s += static_cast<double>(dy[(n * d.m + m) * out_plane + o]);
        db[m] = static_cast<T>(s);
      }
    }
  });
}

// As many multiply-accumulates as the forward convolution.
Cost cost_data(const CostContext& c) {
  Cost r;
  if (c.in.size() >= 2 && !c.in[1].empty() && c.in[1][0] > 0)
    r.macs = nn::numel_d(c.in[0]) * nn::numel_d(c.in[1]) / static_cast<double>(c.in[1][0]);
  r.flops = 2 * r.macs;
  r.bytes = io_bytes(c);
  return r;
}
Cost cost_weight(const CostContext& c) {
  Cost r;
  if (c.in.size() >= 2 && !c.out.empty() && !c.out[0].empty() && c.out[0][0] > 0)
    r.macs = nn::numel_d(c.in[1]) * nn::numel_d(c.out[0]) / static_cast<double>(c.out[0][0]);
  r.flops = 2 * r.macs;
  r.bytes = io_bytes(c);
  return r;
}

}  // namespace

extern const OpDef kOpConvGradData, kOpConvGradWeight;
const OpDef kOpConvGradData{"ConvGradData", "joule", 2, 2, infer_data, run_data, cost_data};
const OpDef kOpConvGradWeight{"ConvGradWeight", "joule", 2, 2, infer_weight, run_weight, cost_weight};

}  // namespace joule::ops
