// MaxPool and AveragePool of N,H,W,C tensors: joule-domain ops of those names with
// `channels_last` = 1 and otherwise the ONNX ops' attributes (latest opset semantics), made by
// the channels_last pass so that a pool between two convolutions needs no layout Transposes.
// This reference kernel permutes to N,C,H,W, runs the ONNX op's reference and permutes back;
// the fast one is kernels/eltwise/pool.cpp.
#include "joule/ops/movement_util.h"
#include "joule/ops/pool_util.h"

namespace joule::ops {
namespace {

constexpr int64_t kOnnxOpset = 19;

// The ONNX node computing the same on N,C,H,W.
ir::Node onnx_node(const ir::Node& n) {
  if (n.attr_int("channels_last", 0) != 1) fail(n.where() + ": the joule-domain pool needs channels_last = 1");
  ir::Node o = n;
  o.domain.clear();
  o.attrs.erase("channels_last");
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
  InferContext inner{n, kOnnxOpset, {&xn}, {nullptr}, std::vector<ir::TensorType>(1), {}};
  onnx_op(n).infer(inner);
  const ir::TensorType& y = inner.out(0);
  c.out(0) = y.has_shape ? movement::permute_type(y, movement::kNchwToNhwc) : y;
}

void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  if (x.rank() != 4) fail(c.node.where() + ": channels_last needs a rank-4 input, got " + x.describe());
  const ir::Node n = onnx_node(c.node);
  const Tensor xn = movement::transpose_tensor(x, movement::kNhwcToNchw);
  KernelContext inner{n, kOnnxOpset, {&xn}, std::vector<Tensor>(1), c.pool};
  onnx_op(n).run(inner);
  c.outputs[0] = movement::transpose_tensor(inner.outputs[0], movement::kNchwToNhwc);
}

std::string check(const ir::Node& n, int64_t) {
  if (n.attr_int("channels_last", 0) != 1) return "channels_last other than 1";
  if (n.outputs.size() > 1 && !n.outputs[1].empty()) return "an Indices output";
  return "";
}

}  // namespace

extern const OpDef kOpMaxPoolNhwc, kOpAveragePoolNhwc;
const OpDef kOpMaxPoolNhwc{"MaxPool", "joule", 1, 1, infer, run, pool_cost, check};
const OpDef kOpAveragePoolNhwc{"AveragePool", "joule", 1, 1, infer, run, pool_cost, check};

}  // namespace joule::ops
