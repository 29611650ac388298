// joule LookupTable: y = table[x] for 8-bit codes. Input X uint8 or int8; attribute `to` (ONNX
// data type code: uint8, int8 or float32), the output's type; the 256 entries, indexed by the
// code's byte (an int8 code -1 reads entry 255), in attribute `table` (integers, for uint8/int8)
// or `values` (floats, for float32). lower_int8 makes it from a chain of elementwise ops after a
// DequantizeLinear, ending in a QuantizeLinear (Q(f(DQ(c)))) or in float (f(DQ(c))), whose 256
// possible results it computes once with the ops' reference kernels.
#include "joule/ops/lookup_table.h"

#include "joule/ops/op.h"

namespace joule::ops {

std::string lookup_table_problem(const ir::Node& n, DType in, LookupTableDef* t) {
  if (in != DType::UInt8 && in != DType::Int8) return std::string("input is ") + dtype_name(in) + ", not 8-bit codes";
  t->to = dtype_from_onnx(static_cast<int>(n.attr_int("to", 0)));
  if (t->to == DType::Float32) {
    t->floats = n.attr_floats("values");
    if (t->floats.size() != 256)
      return "attribute 'values' has " + std::to_string(t->floats.size()) + " entries, not 256";
    return "";
  }
  if (t->to != DType::UInt8 && t->to != DType::Int8) return "attribute 'to' is not uint8, int8 or float32";
  const std::vector<int64_t> v = n.attr_ints("table");
  if (v.size() != 256) return "attribute 'table' has " + std::to_string(v.size()) + " entries, not 256";
  const int64_t lo = t->to == DType::UInt8 ? 0 : -128, hi = t->to == DType::UInt8 ? 255 : 127;
  t->bytes.resize(256);
  for (size_t i = 0; i < 256; ++i) {
    if (v[i] < lo || v[i] > hi) return "table entry " + std::to_string(i) + " is outside the output type";
    t->bytes[i] = static_cast<uint8_t>(v[i]);  // the output code's byte
  }
  return "";
}

namespace {

void infer(InferContext& c) {
  LookupTableDef t;
  if (std::string why = lookup_table_problem(c.node, c.in(0).dtype, &t); !why.empty()) fail(c.node.where() + ": " + why);
  c.out(0) = c.in(0);
  c.out(0).dtype = t.to;
}

// The reference kernel: one table read per code.
void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  LookupTableDef t;
  if (std::string why = lookup_table_problem(c.node, x.dtype(), &t); !why.empty()) fail(c.node.where() + ": " + why);
  Tensor& y = c.output(0, t.to, x.shape());
  const auto* in = static_cast<const uint8_t*>(x.raw());
  if (t.to == DType::Float32) {
    for (int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = t.floats[in[i]];
  } else {
    auto* out = static_cast<uint8_t*>(y.raw());
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = t.bytes[in[i]];
  }
}

}  // namespace

extern const OpDef kOpJouleLookupTable;
const OpDef kOpJouleLookupTable{"LookupTable", "joule", 1, 1, infer, run};

}  // namespace joule::ops
