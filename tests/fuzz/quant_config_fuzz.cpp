// The quantization YAML (`joule quantize --config`): parsed, resolved against a model, planned,
// calibrated on one sample and turned into the simulation graph.
#include "fuzz.h"
#include "quant_model.h"
#include "joule/quant/config.h"

using namespace joule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::expect_clean([&] {
    const quant::QuantConfig c = quant::QuantConfig::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
    const ir::Graph& g = fuzz::quant_graph();
    quant::QuantPlan plan = quant::plan_quantization(g, quant::resolve(g, c));
    (void)quant::describe_plan(g, plan);
    quant::calibrate(g, plan, fuzz::one_sample(), quant::CalibrationOptions{});
    (void)quant::insert_qdq(g, plan);
  });
  return 0;
}
