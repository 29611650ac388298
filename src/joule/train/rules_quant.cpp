// Gradient rules of fake quantization (quantization-aware training): joule.FakeQuant through
// joule.FakeQuantGrad, straight-through with clipping, and the scale's gradient for LSQ / PACT
// (the node's attribute `qat`).
#include "joule/train/grad.h"

namespace joule::train {
namespace {

void fake_quant_rule(GradContext& c) {
  std::map<std::string, ir::Attribute> attrs = c.node.attrs;
  std::vector<std::string> in = {c.dy[0], c.in(0)};
  for (size_t i = 1; i < c.node.inputs.size(); ++i) in.push_back(c.node.inputs[i]);
  // Scales learn with lsq and pact; with ste (and outside QAT) they stay as calibrated.
  const bool scale = c.node.inputs.size() > 1 && c.need[1] && c.node.attr_string("qat", "ste") != "ste";
  const auto outs = c.b.add("FakeQuantGrad", in, attrs, scale ? 2 : 1, "joule");
  if (c.need[0]) c.dx[0] = outs[0];
  if (scale) c.dx[1] = outs[1];
}

}  // namespace

const std::vector<GradDef>& quant_grads() {
  static const std::vector<GradDef> rules = {{"joule", "FakeQuant", fake_quant_rule}};
  return rules;
}

}  // namespace joule::train
