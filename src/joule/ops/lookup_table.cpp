// joule LookupTable: y = table[x] for 8-bit codes. Input X uint8 or int8; attribute `table`, 256
// integers indexed by the code's byte (an int8 code -1 reads entry 255); attribute `to` (ONNX
// data type code: uint8 or int8), the output's type. lower_int8 makes it from a chain of
// elementwise ops between a DequantizeLinear and a QuantizeLinear (Q(f(DQ(c)))), whose 256
// possible results it computes once with the engine's own kernels.
#include "joule/ops/lookup_table.h"

#include "joule/ops/movement_util.h"

namespace joule::ops {

std::string lookup_table_problem(const ir::Node& n, DType in, std::vector<uint8_t>* table, DType* out) {
  if (in != DType::UInt8 && in != DType::Int8) return std::string("input is ") + dtype_name(in) + ", not 8-bit codes";
  const DType to = dtype_from_onnx(static_cast<int>(n.attr_int("to", 0)));
  if (to != DType::UInt8 && to != DType::Int8) return "attribute 'to' is not uint8 or int8";
  const std::vector<int64_t> t = n.attr_ints("table");
  if (t.size() != 256) return "attribute 'table' has " + std::to_string(t.size()) + " entries, not 256";
  const int64_t lo = to == DType::UInt8 ? 0 : -128, hi = to == DType::UInt8 ? 255 : 127;
  table->resize(256);
  for (size_t i = 0; i < 256; ++i) {
    if (t[i] < lo || t[i] > hi) return "table entry " + std::to_string(i) + " is outside the output type";
    (*table)[i] = static_cast<uint8_t>(t[i]);  // the output code's byte
  }
  *out = to;
  return "";
}

namespace {

void infer(InferContext& c) {
  std::vector<uint8_t> table;
  DType to = DType::Undefined;
  if (std::string why = lookup_table_problem(c.node, c.in(0).dtype, &table, &to); !why.empty())
    fail(c.node.where() + ": " + why);
  c.out(0) = c.in(0);
  c.out(0).dtype = to;
}

// The reference kernel: one table read per code.
void run(KernelContext& c) {
  const Tensor& x = c.in(0);
  std::vector<uint8_t> table;
  DType to = DType::Undefined;
  if (std::string why = lookup_table_problem(c.node, x.dtype(), &table, &to); !why.empty())
    fail(c.node.where() + ": " + why);
  Tensor& y = c.output(0, to, x.shape());
  const auto* in = static_cast<const uint8_t*>(x.raw());
  auto* out = static_cast<uint8_t*>(y.raw());
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = table[in[i]];
}

}  // namespace

extern const OpDef kOpJouleLookupTable;
const OpDef kOpJouleLookupTable{"LookupTable", "joule", 1, 1, infer, run};

}  // namespace joule::ops
