// ConvTranspose: 1-D/2-D/3-D transposed convolution with strides, pads, output_padding,
// output_shape, dilations, group and auto_pad. W is [C, M/group, k...].
// Reference kernel: parallel over (batch, output channel); each input element scatters into
// y[i*s + k*d - pad] with the input-width loop innermost and contiguous.
#include "joule/ops/conv_util.h"
#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

struct Setup {
  ConvGeometry g;
  int64_t group = 1;
  std::vector<int64_t> output_padding, output_shape;  // per spatial dim; output_shape -1 = none
};

Setup read_setup(const ir::Node& n, int nsp, const std::vector<int64_t>& w_kernel) {
  Setup s;
  s.g = read_conv_geometry(n, nsp, w_kernel);
  s.g.ceil_mode = false;
  s.group = n.attr_int("group", 1);
  if (s.group <= 0) fail(n.where() + ": group must be positive");
  const size_t ns = static_cast<size_t>(nsp);
  s.output_padding = n.attr_ints("output_padding", std::vector<int64_t>(ns, 0));
  if (s.output_padding.size() != ns)
    fail(n.where() + ": output_padding needs " + std::to_string(ns) + " values");
  for (size_t i = 0; i < ns; ++i)
    if (s.output_padding[i] < 0 ||
        s.output_padding[i] >= std::max(s.g.strides[i], s.g.dilations[i]))
      fail(n.where() + ": output_padding must be in [0, max(stride, dilation))");
  s.output_shape.assign(ns, -1);
  if (n.has_attr("output_shape")) {
    std::vector<int64_t> os = n.attr_ints("output_shape");
    if (os.size() == ns + 2) os.erase(os.begin(), os.begin() + 2);  // full shape given
    if (os.size() != ns) fail(n.where() + ": output_shape needs " + std::to_string(ns) + " values");
    s.output_shape = os;
  }
  return s;
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
    fail(c.node.where() + ": weight rank does not match input rank");
  const int nsp = static_cast<int>(r) - 2;
  const std::vector<int64_t> wk =
      w.has_shape ? spatial_dims(w) : std::vector<int64_t>(static_cast<size_t>(nsp), -1);
  const Setup s = read_setup(c.node, nsp, wk);
  const int64_t cin = static_dim_or(x, 1), wc = static_dim_or(w, 0), wm = static_dim_or(w, 1);
  if (cin >= 0 && wc >= 0 && cin != wc)
    fail(c.node.where() + ": input has " + std::to_string(cin) + " channels, weight " +
         std::to_string(wc));
  if (wc >= 0 && wc % s.group != 0) fail(c.node.where() + ": channels not divisible by group");
  o.has_shape = true;
  o.dims = {x.dims[0], wm >= 0 ? ir::Dim{wm * s.group, ""} : ir::Dim{}};
  for (int i = 0; i < nsp; ++i) {
    const int64_t v = conv_transpose_out_dim(
        s.g, c.node, i, static_dim_or(x, static_cast<size_t>(i) + 2),
        s.output_padding[static_cast<size_t>(i)], s.output_shape[static_cast<size_t>(i)]);
    o.dims.push_back(v >= 0 ? ir::Dim{v, ""} : ir::Dim{});
  }
}

template <class T>
void conv_transpose(const Tensor& X, const Tensor& W, const Tensor* B, Tensor& Y,
                    const SpatialPlan& p, int64_t group, ThreadPool* pool) {
  const int64_t N = X.dim(0), C = X.dim(1), mg = W.dim(1), M = mg * group, cg = C / group;
  const int64_t in_plane = p.in_size(), out_plane = p.out_size(), kvol = p.k_size();
  const T* x = X.data<T>();
  const T* w = W.data<T>();
  const T* b = B ? B->data<T>() : nullptr;
  T* y = Y.data<T>();
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / M, m = t % M, g = m / mg, om = m % mg;
      T* yp = y + t * out_plane;
      const T bias = b ? b[m] : T(0);
      for (int64_t i = 0; i < out_plane; ++i) yp[i] = bias;
      for (int64_t ic = 0; ic < cg; ++ic) {
        const int64_t c = g * cg + ic;
        const T* xp = x + (n * C + c) * in_plane;
        const T* wp = w + (c * mg + om) * kvol;
        for (int64_t kd = 0; kd < p.k[0]; ++kd)
          for (int64_t kh = 0; kh < p.k[1]; ++kh)
            for (int64_t kw = 0; kw < p.k[2]; ++kw)
              scatter_kernel_offset(p, kd, kh, kw, xp, wp[(kd * p.k[1] + kh) * p.k[2] + kw], yp);
      }
    }
  };
  parallel_or_serial(pool, N * M, body);
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  const ConvTransposePlan plan = plan_conv_transpose(c);
  const Tensor& X = c.in(0);
  const Tensor& W = c.in(1);
  const Tensor* B = c.has(2) ? c.inputs[2] : nullptr;
  const SpatialPlan& p = plan.p;
  const Shape& ys = plan.out;
  Tensor Y(X.dtype(), ys);
  visit_floating(X.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    conv_transpose<T>(X, W, B, Y, p, plan.group, c.pool);
  });
  c.outputs[0] = Y;
}

Cost cost(const CostContext& c) {
  Cost r;
  if (c.in.size() >= 2 && c.in[1].size() >= 2) {
    // every input element meets (M/group) * kernel volume weights
    r.macs = nn::numel_d(c.in[0]) * nn::numel_d(c.in[1]) /
             static_cast<double>(std::max<int64_t>(1, c.in[1][0]));
    const bool bias =
        c.in.size() >= 3 && c.in_types.size() >= 3 && c.in_types[2] != DType::Undefined;
    r.flops = 2 * r.macs + (bias && !c.out.empty() ? nn::numel_d(c.out[0]) : 0);
  }
  r.bytes = io_bytes(c);
  return r;
}

}  // namespace

ConvTransposePlan plan_conv_transpose(const KernelContext& c) {
  const Tensor& X = c.in(0);
  const Tensor& W = c.in(1);
  const Tensor* B = c.has(2) ? c.inputs[2] : nullptr;
  nn::check_same_dtypes(c, 0, 3);
  const int nsp = check_conv_operands(c, X, W);
  if (nsp > 3) fail_unsupported(c.node.where() + ": more than 3 spatial dimensions");
  const Setup s = read_setup(c.node, nsp, Shape(W.shape().begin() + 2, W.shape().end()));
  if (X.dim(1) != W.dim(0) || W.dim(0) % s.group != 0)
    fail(c.node.where() + ": input " + X.describe() + " does not match weight " + W.describe() +
         " with group " + std::to_string(s.group));
  const int64_t M = W.dim(1) * s.group;
  if (B && (B->rank() != 1 || B->dim(0) != M))
    fail(c.node.where() + ": bias " + B->describe() + " does not match " + std::to_string(M) +
         " output channels");
  ConvTransposePlan plan;
  plan.group = s.group;
  SpatialPlan& p = plan.p;
  for (int j = 0; j < 3; ++j) {
    p.in[j] = p.out[j] = p.k[j] = p.s[j] = p.d[j] = 1;
    p.pb[j] = p.pe[j] = 0;
  }
  plan.out = {X.dim(0), M};
  for (int i = 0; i < nsp; ++i) {
    const int j = 3 - nsp + i;
    const size_t si = static_cast<size_t>(i);
    p.in[j] = X.dim(i + 2);
    p.out[j] = conv_transpose_out_dim(s.g, c.node, i, p.in[j], s.output_padding[si],
                                      s.output_shape[si], &p.pb[j], &p.pe[j]);
    p.k[j] = s.g.kernel[si];
    p.s[j] = s.g.strides[si];
    p.d[j] = s.g.dilations[si];
    plan.out.push_back(p.out[j]);
  }
  return plan;
}

extern const OpDef kOpConvTranspose;
const OpDef kOpConvTranspose{"ConvTranspose", "", 2, 3, infer, run, cost};

}  // namespace joule::ops
