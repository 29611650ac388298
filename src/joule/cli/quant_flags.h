#pragma once
// The flags quantize, sensitivity, automp and compare share, bound onto api::QuantOptions.
#include <string>

#include <CLI/CLI.hpp>

#include "joule/api/quantize.h"
#include "joule/cli/util.h"

namespace joule::cli {

struct QuantFlags {
  std::string model, calib, eval, out, format = "table", store;
  bool quiet = false;
  ShapeFlags shapes;
  api::QuantOptions opt;
  // The options with the data specs and shapes filled in (call in the action).
  const api::QuantOptions& resolved();
};

// model, --calib, --calib-samples, --calib-cache, --eval, --eval-samples, --input-shape,
// --threads, --int8, --format, --quiet, --store and the data flags. `with_config`: --config (required).
void add_quant_flags(CLI::App& app, QuantFlags& f, bool with_config = true);

}  // namespace joule::cli
