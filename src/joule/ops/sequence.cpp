// The sequence ops of ONNX (opset 11): SequenceConstruct, SequenceEmpty, SequenceInsert,
// SequenceErase, SequenceAt and SequenceLength. A sequence is a value of kind Sequence whose
// items are shared, immutable tensors of one element type (Tensor::sequence); every op builds
// a new sequence and copies no tensor data. Positions may be negative (counted from the back).
#include "joule/ops/sequence_util.h"
#include "joule/ops/util.h"

namespace joule::ops {
namespace {

void infer_construct(InferContext& c) {
  std::vector<const ir::TensorType*> items;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    items.push_back(&seq::tensor_input(c, i));
    if (c.in(i).dtype != c.in(0).dtype)
      fail(c.node.where() + ": every input must have one dtype, got " + c.in(0).str() + " and " + c.in(i).str());
  }
  c.out(0) = seq::merge_items(items).with_kind(ValueKind::Sequence);
}

void run_construct(KernelContext& c) {
  std::vector<Tensor> items;
  for (size_t i = 0; i < c.inputs.size(); ++i) items.push_back(c.in(i));
  c.outputs[0] = Tensor::sequence(c.in(0).dtype(), std::move(items));
}

DType empty_dtype(const ir::Node& n) {
  const int64_t code = n.attr_int("dtype", 1);
  const DType t = dtype_from_onnx(static_cast<int>(code));
  if (t == DType::Undefined) fail_unsupported(n.where() + ": dtype " + std::to_string(code) + " is not supported");
  return t;
}

void infer_empty(InferContext& c) {
  ir::TensorType t;
  t.dtype = empty_dtype(c.node);
  c.out(0) = t.with_kind(ValueKind::Sequence);
}

void run_empty(KernelContext& c) { c.outputs[0] = Tensor::sequence(empty_dtype(c.node), {}); }

void infer_insert(InferContext& c) {
  const ir::TensorType& s = seq::sequence_input(c, 0);
  const ir::TensorType& t = seq::tensor_input(c, 1);
  if (t.dtype != s.dtype) fail(c.node.where() + ": inserting " + t.str() + " into " + s.str());
  // The element shape stays known only when the sequence's was (an empty sequence has none).
  c.out(0) = s.has_shape ? seq::merge_items({&s, &t}).with_kind(ValueKind::Sequence) : s;
}

void run_insert(KernelContext& c) {
  const Tensor& s = seq::sequence_value(c, 0);
  const Tensor& t = c.in(1);
  if (t.dtype() != s.dtype()) fail(c.node.where() + ": inserting " + t.describe() + " into a sequence of " + dtype_name(s.dtype()));
  std::vector<Tensor> items = s.items();
  const int64_t n = static_cast<int64_t>(items.size());
  const int64_t at = c.has(2) ? seq::position(c, 2, n, true) : n;
  items.insert(items.begin() + at, t);
  c.outputs[0] = Tensor::sequence(s.dtype(), std::move(items));
}

void infer_erase(InferContext& c) { c.out(0) = seq::sequence_input(c, 0); }

void run_erase(KernelContext& c) {
  const Tensor& s = seq::sequence_value(c, 0);
  std::vector<Tensor> items = s.items();
  const int64_t n = static_cast<int64_t>(items.size());
  if (n == 0) fail(c.node.where() + ": cannot erase from an empty sequence");
  const int64_t at = c.has(1) ? seq::position(c, 1, n, false) : n - 1;
  items.erase(items.begin() + at);
  c.outputs[0] = Tensor::sequence(s.dtype(), std::move(items));
}

void infer_at(InferContext& c) { c.out(0) = seq::sequence_input(c, 0).with_kind(ValueKind::Tensor); }

void run_at(KernelContext& c) {
  const Tensor& s = seq::sequence_value(c, 0);
  const int64_t n = static_cast<int64_t>(s.items().size());
  c.outputs[0] = s.items()[static_cast<size_t>(seq::position(c, 1, n, false))];
}

void infer_length(InferContext& c) {
  seq::sequence_input(c, 0);
  c.out(0) = ir::TensorType::of(DType::Int64, {});
}

void run_length(KernelContext& c) {
  c.outputs[0] = Tensor::scalar<int64_t>(static_cast<int64_t>(seq::sequence_value(c, 0).items().size()));
}

}  // namespace

extern const OpDef kOpSequenceConstruct;
const OpDef kOpSequenceConstruct{"SequenceConstruct", "", 1, -1, infer_construct, run_construct, nullptr, nullptr, false, true};
extern const OpDef kOpSequenceEmpty;
const OpDef kOpSequenceEmpty{"SequenceEmpty", "", 0, 0, infer_empty, run_empty, nullptr, nullptr, false, true};
extern const OpDef kOpSequenceInsert;
const OpDef kOpSequenceInsert{"SequenceInsert", "", 2, 3, infer_insert, run_insert, nullptr, nullptr, false, true};
extern const OpDef kOpSequenceErase;
const OpDef kOpSequenceErase{"SequenceErase", "", 1, 2, infer_erase, run_erase, nullptr, nullptr, false, true};
extern const OpDef kOpSequenceAt;
const OpDef kOpSequenceAt{"SequenceAt", "", 2, 2, infer_at, run_at, nullptr, nullptr, false, true};
extern const OpDef kOpSequenceLength;
const OpDef kOpSequenceLength{"SequenceLength", "", 1, 1, infer_length, run_length, nullptr, nullptr, false, true};

}  // namespace joule::ops
