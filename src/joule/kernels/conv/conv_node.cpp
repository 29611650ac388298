#include "joule/kernels/conv/conv_node.h"

#include <limits>

#include "joule/kernels/select.h"
#include "joule/ops/conv_util.h"
#include "joule/ops/movement_util.h"

namespace joule::kernels {

namespace {

std::string read_epilogue(const ir::Node& n, Epilogue* e) {
  if (n.op_type != "FusedConv") return "";
  const std::string act = n.attr_string("activation", "");
  const std::vector<float> ps = n.attr_floats("activation_params", {});
  if (act.empty()) {
    e->act = Activation::kNone;
  } else if (act == "Relu") {
    e->act = Activation::kRelu;
  } else if (act == "Clip" && ps.size() == 2) {
    e->act = Activation::kClip;
    e->alpha = ps[0];
    e->beta = ps[1];
  } else if (act == "LeakyRelu" && ps.size() == 1) {
    e->act = Activation::kLeakyRelu;
    e->alpha = ps[0];
  } else if (ps.empty() && (act == "Sigmoid" || act == "SiLU" || act == "HardSwish")) {
    e->act = act == "Sigmoid" ? Activation::kSigmoid : act == "SiLU" ? Activation::kSilu : Activation::kHardSwish;
  } else {
    return "activation '" + act + "' with " + std::to_string(ps.size()) + " parameters";
  }
  return "";
}

class ConvNodeKernel : public Kernel {
 public:
  ConvNodeKernel(const ConvProblem& p, Shape x_shape, Shape y_shape, std::unique_ptr<ConvKernel> k)
      : p_(p), x_shape_(std::move(x_shape)), y_shape_(std::move(y_shape)), k_(std::move(k)) {}

  void run(ops::KernelContext& c) const override {
    const Tensor& X = c.in(0);
    if (X.dtype() != DType::Float32 || X.shape() != x_shape_)
      fail(c.node.where() + ": input " + X.describe() + " differs from the planned float32" +
           shape_str(x_shape_));
    const float* res = nullptr;
    if (p_.epilogue.residual) {
      const Tensor& Z = c.in(3);
      if (Z.dtype() != DType::Float32 || Z.shape() != y_shape_)
        fail(c.node.where() + ": residual " + Z.describe() + " differs from the output shape " +
             shape_str(y_shape_));
      res = Z.data<float>();
    }
    Tensor& Y = c.output(0, DType::Float32, y_shape_);
    if (!p_.runtime_weights) {
      k_->run(X.data<float>(), res, Y.data<float>(), *c.pool);
      return;
    }
    const Tensor& W = c.in(1);
    if (W.dtype() != DType::Float32 || W.numel() != p_.shape.m * p_.shape.cg() * p_.shape.kh * p_.shape.kw)
      fail(c.node.where() + ": weight " + W.describe() + " differs from the planned one");
    const Tensor* B = p_.has_bias ? &c.in(2) : nullptr;
    if (B && (B->dtype() != DType::Float32 || B->numel() != p_.shape.m))
      fail(c.node.where() + ": bias " + B->describe() + " differs from the planned one");
    k_->run_weights(X.data<float>(), W.data<float>(), B ? B->data<float>() : nullptr, res, Y.data<float>(), *c.pool);
  }
  std::string detail() const override { return k_->detail(); }
  // Every conv algorithm copies constant weights and bias into its own layout at prepare.
  bool reads_input(size_t i) const override { return p_.runtime_weights || (i != 1 && i != 2); }
  int may_overwrite_input() const override {
    return p_.epilogue.residual && !p_.runtime_weights && k_->residual_in_place() ? 3 : -1;
  }

 private:
  ConvProblem p_;
  Shape x_shape_, y_shape_;
  std::unique_ptr<ConvKernel> k_;
};

}  // namespace

std::string read_conv_shape(const ir::Node& n, const Shape& xs, const Shape& ws, const Shape& ys, ConvShape* out) {
  const int nsp = static_cast<int>(xs.size()) - 2;
  const ops::ConvGeometry g = ops::read_conv_geometry(n, nsp, Shape(ws.begin() + 2, ws.end()));
  const ops::SpatialPlan sp = ops::make_spatial_plan(g, n, Shape(xs.begin() + 2, xs.end()));
  ConvShape& s = *out;
  s = ConvShape{};
  s.n = xs[0];
  s.c = xs[1];
  s.m = ws[0];
  s.group = n.attr_int("group", 1);
  // SpatialPlan is normalised to 3-D with leading unit dims: [1] is H, [2] is W.
  s.h = sp.in[1];
  s.w = sp.in[2];
  s.kh = sp.k[1];
  s.kw = sp.k[2];
  s.stride_h = sp.s[1];
  s.stride_w = sp.s[2];
  s.dil_h = sp.d[1];
  s.dil_w = sp.d[2];
  s.pad_top = sp.pb[1];
  s.pad_bottom = sp.pe[1];
  s.pad_left = sp.pb[2];
  s.pad_right = sp.pe[2];
  s.oh = sp.out[1];
  s.ow = sp.out[2];
  if (s.group <= 0 || s.c % s.group || s.m % s.group || ws[1] * s.group != s.c) return "channels do not match groups";
  if (s.n * s.m * s.oh * s.ow != shape_numel(ys)) return "output shape does not match the geometry";
  return "";
}

std::string read_conv_problem(const NodeView& v, ConvProblem* p, bool runtime_weights_ok) {
  const ir::Node& n = v.node;
  Shape xs, ws, ys;
  if (!v.static_shape(0, &xs) || !v.static_shape(1, &ws) || v.out_types.empty() || !v.out_types[0] ||
      !v.out_types[0]->is_static())
    return "shapes are not static";
  ys = v.out_types[0]->static_shape();
  if (v.in_types[0]->dtype != DType::Float32) return std::string("input is ") + dtype_name(v.in_types[0]->dtype) + ", not float32";
  if (xs.size() != 3 && xs.size() != 4) return std::to_string(xs.size() - 2) + "-D convolution (1-D and 2-D only)";
  const Tensor* W = v.constant(1);
  const Tensor* B = v.has(2) ? v.constant(2) : nullptr;
  p->has_bias = v.has(2);
  p->runtime_weights = !W || (v.has(2) && !B);
  if (p->runtime_weights && !runtime_weights_ok) return W ? "bias is not a constant" : "weight is not a constant";
  if (p->runtime_weights && (v.in_types[1]->dtype != DType::Float32 || (v.has(2) && v.in_types[2]->dtype != DType::Float32)))
    return "weight or bias is not float32";
  const bool residual = v.has(3);
  if (residual) {
    Shape zs;
    if (!v.static_shape(3, &zs) || zs != ys) return "residual shape differs from the output shape";
  }
  if (std::string r = read_epilogue(n, &p->epilogue); !r.empty()) return r;
  p->epilogue.residual = residual;
  p->channels_last = n.op_type == "FusedConv" && n.attr_int("channels_last", 0) != 0;
  if (p->channels_last) {
    if (xs.size() != 4 || ys.size() != 4) return "channels_last needs rank-4 tensors";
    const auto to_nchw = [](const Shape& s) { return Shape{s[0], s[3], s[1], s[2]}; };
    xs = to_nchw(xs);
    ys = to_nchw(ys);
  }

  if (std::string r = read_conv_shape(n, xs, ws, ys, &p->shape); !r.empty()) return r;
  p->weight = p->runtime_weights ? nullptr : W->data<float>();
  p->bias = p->runtime_weights || !B ? nullptr : B->data<float>();
  return "";
}

const std::vector<std::string>& channels_last_conv_algorithms() {
  static const std::vector<std::string> names = {"onednn",        "onednn_bf16",   "grouped",      "implicit_nhwc",
                                                 "winograd",      "winograd_f2",   "winograd_bf16", "winograd_f2_bf16"};
  return names;
}

std::string read_nchw_conv_problem(const NodeView& v, ConvProblem* p) {
  if (std::string r = read_conv_problem(v, p); !r.empty()) return r;
  if (!p->channels_last) return "";
  std::string names;
  for (const std::string& a : channels_last_conv_algorithms()) names += (names.empty() ? "" : ", ") + a;
  return "channels_last (N,H,W,C) tensors: only " + names + " compute that layout";
}

bool channels_last_estimated_faster(const ir::Graph& g, const ir::Node& n, int threads, const AlgoSpec& spec) {
  const NodeView v = view_of(g, n, threads);
  double best = std::numeric_limits<double>::infinity();
  for (const Algorithm* a : algorithms_for("conv"))
    if (spec.ranks(*a) && a->supports(v).empty()) best = std::min(best, a->estimate_ms(v));
  // A conv left in N,C,H,W between N,H,W,C neighbours costs a Transpose of its input and of its
  // output (the tiled transpose moves about 5 GB/s of data at 1 thread, measured on resnext50).
  Shape xs;
  if (v.static_shape(0, &xs) && !v.out_types.empty() && v.out_types[0] && v.out_types[0]->is_static()) {
    const double elems = static_cast<double>(shape_numel(xs) + shape_numel(v.out_types[0]->static_shape()));
    best += 4.0 * elems / (5e9 * threads) * 1e3;
  }
  // The node as the channels_last pass would make it.
  ir::Node cl = n;
  ops::make_channels_last(cl);
  NodeView w{cl, v.in_types, v.out_types, v.constants, threads};
  std::vector<ir::TensorType> nhwc;
  nhwc.reserve(3);
  for (size_t i : {size_t{0}, size_t{3}})
    if (w.has(i)) w.in_types[i] = &nhwc.emplace_back(ops::movement::permute_type(*w.in_types[i], ops::movement::kNchwToNhwc));
  if (w.out_types.empty() || !w.out_types[0]) return false;
  w.out_types[0] = &nhwc.emplace_back(ops::movement::permute_type(*w.out_types[0], ops::movement::kNchwToNhwc));
  for (const std::string& name : channels_last_conv_algorithms()) {
    const Algorithm* a = find_algorithm("conv", name);
    if (a && spec.ranks(*a) && a->supports(w).empty() && a->estimate_ms(w) < best) return true;
  }
  return false;
}

std::unique_ptr<Kernel> prepare_conv(const NodeView& v, const ConvFactory& factory) {
  ConvProblem p;
  if (std::string r = read_conv_problem(v, &p, true); !r.empty()) fail_internal(v.node.where() + ": " + r);
  Shape xs;
  v.static_shape(0, &xs);
  return std::make_unique<ConvNodeKernel>(p, xs, v.out_types[0]->static_shape(), factory(p, v.threads));
}

}  // namespace joule::kernels
