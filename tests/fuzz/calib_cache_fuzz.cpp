// The calibration cache (`--calib-cache`, JSON): read back instead of observing, then the ranges
// it gave turned into scales and the simulation graph. The W8A8 plan (examples/quant/w8a8.yaml) of
// the bundled CNN.
#include "fuzz.h"
#include "quant_model.h"
#include "joule/quant/config.h"

using namespace joule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  quant::CalibrationOptions o;
  o.cache_path = fuzz::write_scratch("calib.json", data, size);
  o.data_label = "fuzz";
  fuzz::expect_clean([&] {
    const ir::Graph& g = fuzz::quant_graph();
    static const quant::QuantConfig w8a8 = quant::QuantConfig::parse(R"(default:
  weight: {format: int, bits: 8, symmetric: true, granularity: per_channel, calibrator: minmax}
  input:  {format: int, bits: 8, symmetric: false, granularity: per_tensor, calibrator: percentile, percentile: 99.99}
rules:
  - match: {type: Gemm}
    input: {format: int, bits: 8, calibrator: entropy}
)", "w8a8.yaml");
    quant::QuantPlan plan = quant::plan_quantization(g, quant::resolve(g, w8a8));
    quant::calibrate(g, plan, fuzz::one_sample(), o);
    (void)quant::insert_qdq(g, plan);
  });
  return 0;
}
