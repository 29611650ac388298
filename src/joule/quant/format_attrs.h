#pragma once
// A Format as the attributes of joule's FakeQuant node (domain "joule"), and back. The node is
// how formats ONNX cannot express (fixed point, minifloats, block floating point, integers
// other than 8 bits) appear in a quantized graph:
//   FakeQuant(X, scale?, zero_point?) -> Y, float32, Y = dequantize(quantize(X)).
#include "joule/ir/graph.h"
#include "joule/quant/format.h"

namespace joule::quant {

void set_format_attrs(ir::Node& n, const Format& f);
// Throws BadInput naming the node for a missing or invalid format.
Format format_from_attrs(const ir::Node& n);

}  // namespace joule::quant
