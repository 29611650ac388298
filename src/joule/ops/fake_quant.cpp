// FakeQuant (domain "joule"): Y = dequantize(quantize(X)) in any joule number format (the
// attributes, see quant/format_attrs.h), with the format's scale and zero point as optional
// inputs 1 and 2 (a scalar, or one entry per channel along `axis`). The simulation pass uses it
// for the formats ONNX QuantizeLinear cannot express.
#include "joule/ops/util.h"
#include "joule/quant/format_attrs.h"

namespace joule::ops {
namespace {

std::string check_fake_quant(const ir::Node& n, int64_t) {
  try {
    quant::format_from_attrs(n);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void run_fake_quant(KernelContext& c) {
  const Tensor& x = c.in(0);
  if (x.dtype() != DType::Float32) fail_unsupported(c.node.where() + ": input must be float32, got " + x.describe());
  quant::Format f = quant::format_from_attrs(c.node);
  quant::QParams q;
  if (c.has(1)) {
    const Tensor& s = c.in(1);
    for (int64_t i = 0; i < s.numel(); ++i) q.scale.push_back(static_cast<float>(s.value_as_double(i)));
    q.zero_point.assign(q.scale.size(), 0);
    if (c.has(2)) {
      JOULE_CHECK(c.in(2).numel() == s.numel(), c.node.where() + ": zero_point and scale differ in size");
      for (int64_t i = 0; i < s.numel(); ++i) q.zero_point[static_cast<size_t>(i)] = static_cast<int32_t>(c.in(2).value_as_int(i));
    }
  }
  if (f.granularity == quant::Granularity::PerChannel) {
    f.axis = static_cast<int>(normalize_axis(f.axis, x.rank(), c.node));
    if (!q.scale.empty() && q.scale.size() != static_cast<size_t>(x.dim(f.axis)))
      fail(c.node.where() + ": " + std::to_string(q.scale.size()) + " scales for axis " + std::to_string(f.axis) +
           " of " + x.describe());
  }
  if (f.needs_calibration() && q.scale.empty()) fail(c.node.where() + ": format " + f.name() + " needs a scale input");
  Tensor& y = c.output(0, DType::Float32, x.shape());
  quant::fake_quantize(f, q, x.shape(), x.data<float>(), y.data<float>());
}

}  // namespace

extern const OpDef kOpFakeQuant;
const OpDef kOpFakeQuant{"FakeQuant", "joule", 1, 3, [](InferContext& c) { infer_same_as_input(c); }, run_fake_quant,
                         nullptr, check_fake_quant};

}  // namespace joule::ops
