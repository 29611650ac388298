// FusedConv (domain "joule"): Y = act(Conv(X, W, B) + Z), made by the fuse_conv pass from a
// Conv followed by a residual Add and/or an activation (ORT's com.microsoft FusedConv).
// Inputs X, W, optional B, optional Z (same shape as Y). Attributes: Conv's, plus
// `activation` ("", Relu, LeakyRelu, Clip) and `activation_params` (LeakyRelu: [alpha];
// Clip: [min, max]), and `channels_last` (1: X, Z and Y are N,H,W,C instead of N,C,H,W; set
// by the channels_last pass so that a chain of convs needs no layout reorders). The reference
// kernel runs Conv's reference (on N,C,H,W) and then the epilogue.
#include <algorithm>

#include "joule/ops/movement_util.h"
#include "joule/ops/nn_util.h"

namespace joule::ops {
namespace {

const OpDef& conv_def() {
  static const OpDef* d = find_op("", "Conv");
  return *d;
}

bool channels_last(const ir::Node& n) { return n.attr_int("channels_last", 0) != 0; }

std::string check(const ir::Node& n, int64_t opset) {
  if (std::string why = nn::FusedActivation(n).check(false); !why.empty()) return why;
  return conv_def().check ? conv_def().check(n, opset) : "";
}

void infer(InferContext& c) {
  if (channels_last(c.node)) {
    JOULE_CHECK(!c.in(0).has_shape || c.in(0).dims.size() == 4, c.node.where() + ": channels_last needs a rank-4 input");
    const ir::TensorType x = movement::permute_type(c.in(0), movement::kNhwcToNchw);
    InferContext k{c.node, c.opset, c.input_types, c.input_values, {ir::TensorType{}}, {Tensor{}}};
    k.input_types[0] = &x;
    conv_def().infer(k);
    c.out(0) = movement::permute_type(k.out(0), movement::kNchwToNhwc);
  } else {
    conv_def().infer(c);
  }
  if (c.has(3)) {
    const ir::TensorType& z = c.in(3);
    const ir::TensorType& y = c.out(0);
    if (z.is_static() && y.is_static() && z.static_shape() != y.static_shape())
      fail(c.node.where() + ": residual " + z.str() + " does not match the output " + y.str());
  }
}

void run(KernelContext& c) {
  if (run_half_as_float(c, run)) return;
  KernelContext conv{c.node, c.opset, {c.inputs.begin(), c.inputs.begin() + std::min<size_t>(3, c.inputs.size())}, {}, c.pool};
  conv.outputs.resize(1);
  const bool nhwc = channels_last(c.node);
  Tensor x_nchw;
  if (nhwc) {
    if (c.in(0).rank() != 4) fail(c.node.where() + ": channels_last needs a rank-4 input, got " + c.in(0).describe());
    x_nchw = movement::transpose_tensor(c.in(0), movement::kNhwcToNchw);
    conv.inputs[0] = &x_nchw;
  }
  conv_def().run(conv);
  Tensor Y = nhwc ? movement::transpose_tensor(conv.outputs[0], movement::kNchwToNhwc) : conv.outputs[0];
  const Tensor* Z = c.has(3) ? c.inputs[3] : nullptr;
  if (Z && (Z->shape() != Y.shape() || Z->dtype() != Y.dtype()))
    fail(c.node.where() + ": residual " + Z->describe() + " does not match the output " + Y.describe());
  const nn::FusedActivation act(c.node);
  visit_floating(Y.dtype(), c.node.where(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* y = Y.data<T>();
    const T* z = Z ? Z->data<T>() : nullptr;
    for (int64_t i = 0; i < Y.numel(); ++i) y[i] = act(z ? y[i] + z[i] : y[i]);
  });
  c.outputs[0] = Y;
}

Cost cost(const CostContext& c) {
  Cost r = conv_def().cost(c);
  if (!c.out.empty()) r.flops += nn::numel_d(c.out[0]) * 2;
  return r;
}

}  // namespace

extern const OpDef kOpFusedConv;
const OpDef kOpFusedConv{"FusedConv", "joule", 2, 4, infer, run, cost, check};

}  // namespace joule::ops
