#include "joule/cli/quant_flags.h"

namespace joule::cli {

const api::QuantOptions& QuantFlags::resolved() {
  if (!calib.empty()) opt.calib = api::DataSource::from_spec(calib);
  if (!eval.empty()) opt.eval = api::DataSource::from_spec(eval);
  opt.input_shapes = shapes.parse();
  return opt;
}

void add_quant_flags(CLI::App& app, QuantFlags& f, bool with_config) {
  api::QuantOptions& o = f.opt;
  add_model_arg(app, f.model);
  if (with_config) app.add_option("--config", o.config, "quantization config (YAML; see docs/quantization.md)")->required();
  app.add_option("--calib", f.calib, "calibration data SPEC (.npy, IDX, JPEG class folder or LMDB)");
  app.add_option("--calib-samples", o.calib_samples, "calibration samples (the first N of --calib)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--calib-cache", o.calib_cache, "JSON file of calibration ranges: read when present, then updated");
  app.add_option("--eval", f.eval, "labelled data SPEC for accuracy");
  app.add_option("--eval-samples", o.eval_samples, "evaluate the first N samples of --eval (default all)");
  add_input_shape_option(app, f.shapes);
  add_threads_option(app, o.threads);
  app.add_option("--format", f.format, "table or json")->check(CLI::IsMember({"table", "json"}));
  app.add_flag("--quiet", f.quiet, "no progress on stderr");
  add_store_option(app, f.store);
  add_int8_option(app, o.int8);
  add_data_options(app, o.preprocess);
}

}  // namespace joule::cli
