// The algorithm YAML (`--algo-file`: TARGET: ALGO | [ALGO, ...], default: POLICY), applied to the
// bundled CNN as every command that runs a model does (passes, selection, kernels prepared).
#include "fuzz.h"
#include "joule/api/model.h"
#include "joule/api/prepare.h"

using namespace joule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const api::Model model = api::Model::load("default");
  api::PrepareOptions o = api::PrepareOptions::with_threads(1);
  o.algo.file = fuzz::write_scratch("algo.yaml", data, size);
  o.algo.tuning_cache = (fuzz::scratch() / "tuning.json").string();
  fuzz::expect_clean([&] { (void)api::prepare(model, o); });
  return 0;
}
