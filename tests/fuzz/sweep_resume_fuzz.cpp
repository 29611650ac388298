// A profile sweep's resume files (<model>_overall.csv and <model>_layers.csv, left by an earlier,
// perhaps killed, sweep): read, their finished points skipped, the others measured and appended.
// Input: [uint16 LE L][L bytes: overall.csv][the rest: layers.csv]. The bundled CNN at batch 1 and
// 2, one timed run per point.
#include <algorithm>
#include <filesystem>

#include "fuzz.h"
#include "joule/api/model.h"
#include "joule/profile/sweep.h"

using namespace joule;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  static const api::Model model = api::Model::load("default");
  const std::filesystem::path dir = fuzz::scratch() / "sweep";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const size_t overall = std::min<size_t>(data[0] | data[1] << 8, size - 2);
  std::filesystem::rename(fuzz::write_scratch("o.csv", data + 2, overall), dir / "fuzz_overall.csv");
  std::filesystem::rename(fuzz::write_scratch("l.csv", data + 2 + overall, size - 2 - overall), dir / "fuzz_layers.csv");
  profile::SweepSpec spec;
  spec.batches = {1, 2};
  profile::ProfileOptions o;
  o.model_name = "fuzz";
  o.threads = 1;
  o.warmup = 0;
  o.runs = 1;
  fuzz::expect_clean([&] { (void)profile::run_sweep(model.graph(), spec, o, dir.string(), true); });
  return 0;
}
