// The tuning cache (`auto`'s memory, JSON): read, its entries used for the bundled CNN's nodes
// (an entry may name any algorithm), new measurements added and the file written back.
#include "fuzz.h"
#include "joule/api/model.h"
#include "joule/api/prepare.h"

using namespace joule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const api::Model model = api::Model::load("default");
  api::PrepareOptions o = api::PrepareOptions::with_threads(1);
  o.algo.rules = {"auto"};
  o.algo.tuning_cache = fuzz::write_scratch("tuning.json", data, size);
  fuzz::expect_clean([&] { (void)api::prepare(model, o); });
  return 0;
}
