// Cast (target dtype from the `to` attribute, an ONNX TensorProto code) and CastLike (opset 15,
// target dtype of input 1). Conversions as Tensor::cast: float to int truncates toward zero and
// saturates; strings to and from numbers in their shortest round-trip text; complex and float8
// are unsupported.
#include "joule/ops/elementwise_util.h"
#include "joule/ops/sequence_util.h"

namespace joule::ops {
namespace {

// The dtype for Cast's `to`; throws Unsupported for codes joule has no dtype for.
DType cast_target(const ir::Node& n) {
  if (!n.has_attr("to")) fail(n.where() + ": attribute 'to' is required");
  const int64_t code = n.attr_int("to", 0);
  const DType t = dtype_from_onnx(static_cast<int>(code));
  if (t == DType::Undefined)
    fail_unsupported(n.where() + ": cast to ONNX data type " + std::to_string(code) +
                     " is not supported");
  return t;
}

std::string check_cast(const ir::Node& n, int64_t) {
  const int64_t code = n.attr_int("to", 0);
  if (dtype_from_onnx(static_cast<int>(code)) == DType::Undefined)
    return "cast to ONNX data type " + std::to_string(code) + " is not supported";
  return "";
}

void infer_cast(InferContext& c) {
  c.out(0) = seq::tensor_input(c, 0);
  c.out(0).dtype = cast_target(c.node);
}

void run_cast(KernelContext& c) { c.outputs[0] = c.in(0).cast(cast_target(c.node)); }

void infer_cast_like(InferContext& c) {
  c.out(0) = seq::tensor_input(c, 0);
  c.out(0).dtype = seq::tensor_input(c, 1).dtype;
}

void run_cast_like(KernelContext& c) { c.outputs[0] = c.in(0).cast(c.in(1).dtype()); }

}  // namespace

extern const OpDef kOpCast;
const OpDef kOpCast{"Cast", "", 1, 1, infer_cast, run_cast, nullptr, check_cast, false, true};
extern const OpDef kOpCastLike;
const OpDef kOpCastLike{"CastLike", "", 2, 2, infer_cast_like, run_cast_like, nullptr, nullptr, false, true};

}  // namespace joule::ops
