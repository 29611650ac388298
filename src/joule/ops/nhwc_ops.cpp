// ONNX ops on N,H,W,C tensors: joule-domain ops of the ONNX names with `channels_last` = 1 and
// otherwise the ONNX ops' attributes (latest opset semantics), made by the channels_last pass so
// that the op between two convolutions needs no layout Transposes: MaxPool and AveragePool
// (between GoogLeNet's, Inception's and SqueezeNet's blocks) and inference BatchNormalization
// (DenseNet's pre-activation BN after each Concat; `activation` = "Relu" applies the ReLU that
// follows it, passes/fuse_bn_relu). Input 0 and output 0 are N,H,W,C; the other
// inputs (BN's per-channel vectors) are as in the ONNX op. This reference kernel permutes to
// N,C,H,W, runs the ONNX op's reference and permutes back; the fast ones are
// kernels/eltwise/pool.cpp and norm.cpp.
#include "joule/ops/movement_util.h"
#include "joule/ops/nn_util.h"
#include "joule/ops/pool_util.h"

namespace joule::ops {
namespace {

constexpr int64_t kOnnxOpset = 19;

// The ONNX node computing the same on N,C,H,W.
ir::Node onnx_node(const ir::Node& n) {
  if (n.attr_int("channels_last", 0) != 1) fail(n.where() + ": the joule-domain " + n.op_type + " needs channels_last = 1");
  ir::Node o = n;
  o.domain.clear();
  o.attrs.erase("channels_last");
  o.attrs.erase("activation");
  return o;
}

const OpDef& onnx_op(const ir::Node& n) {
  const OpDef* d = find_op("", n.op_type);
  if (!d) fail_internal(n.where() + ": no ONNX " + n.op_type);
  return *d;
}

void infer(InferContext& c) {
  const ir::TensorType& x = c.in(0);
  JOULE_CHECK(!x.has_shape || x.dims.size() == 4, c.node.where() + ": channels_last needs a rank-4 input");
  const ir::Node n = onnx_node(c.node);
  const ir::TensorType xn = x.has_shape ? movement::permute_type(x, movement::kNhwcToNchw) : x;
  InferContext inner{n, kOnnxOpset, c.input_types, c.input_values, std::vector<ir::TensorType>(1), {}};
  inner.input_types[0] = &xn;
  inner.input_values[0] = nullptr;
  onnx_op(n).infer(inner);
  const ir::TensorType& y = inner.out(0);
  c.out(0) = y.has_shape ? movement::permute_type(y, movement::kNchwToNhwc) : y;
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  if (x.rank() != 4) fail(c.node.where() + ": channels_last needs a rank-4 input, got " + x.describe());
  const ir::Node n = onnx_node(c.node);
  const Tensor xn = movement::transpose_tensor(x, movement::kNhwcToNchw);
  KernelContext inner{n, kOnnxOpset, c.inputs, std::vector<Tensor>(1), c.pool};
  inner.inputs[0] = &xn;
  onnx_op(n).run(inner);
  c.outputs[0] = movement::transpose_tensor(inner.outputs[0], movement::kNchwToNhwc);
  if (c.node.has_attr("activation")) {  // BN's fused Relu (passes/fuse_bn_relu): ONNX Relu's reference
    ir::Node relu;
    relu.op_type = "Relu";
    relu.name = c.node.name;
    relu.inputs = {c.node.outputs[0]};
    relu.outputs = {c.node.outputs[0]};
    const Tensor y = c.outputs[0];
    KernelContext r{relu, kOnnxOpset, {&y}, std::vector<Tensor>(1), c.pool};
    onnx_op(relu).run(r);
    c.outputs[0] = r.outputs[0];
  }
}

std::string check(const ir::Node& n, int64_t) {
  if (n.attr_int("channels_last", 0) != 1) return "channels_last other than 1";
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty()) return "output " + std::to_string(i);
  if (n.op_type == "BatchNormalization" && n.attr_int("training_mode", 0) != 0) return "training_mode";
  if (n.has_attr("activation") && (n.op_type != "BatchNormalization" || n.attr_string("activation", "") != "Relu"))
    return "activation other than a BatchNormalization's Relu";
  return "";
}

}  // namespace

extern const OpDef kOpMaxPoolNhwc, kOpAveragePoolNhwc, kOpBatchNormalizationNhwc;
const OpDef kOpMaxPoolNhwc{"MaxPool", "joule", 1, 1, infer, run, pool_cost, check};
const OpDef kOpAveragePoolNhwc{"AveragePool", "joule", 1, 1, infer, run, pool_cost, check};
const OpDef kOpBatchNormalizationNhwc{"BatchNormalization", "joule", 5, 5, infer, run,
                                      [](const CostContext& c) { return nn::per_element_cost(c, 2); }, check};

}  // namespace joule::ops
