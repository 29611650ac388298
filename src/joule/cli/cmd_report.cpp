#include <fmt/core.h>

#include "joule/cli/commands.h"
#include "joule/cli/util.h"
#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/report/report.h"

namespace joule::cli {

Action add_report(CLI::App& app) {
  auto o = std::make_shared<report::ReportOptions>();
  auto out = std::make_shared<std::string>();
  app.add_option("runs", o->run_dirs, "run folders (with result.json) instead of --store");
  app.add_option("--store", o->store, "results store (an SQLite file)");
  app.add_option("--experiment", o->experiment, "only this experiment's runs (default: every run in the store)");
  app.add_option("--title", o->title, "the report's title");
  app.add_option("-o,--output", *out, "the HTML file to write")->required();
  return [o, out] {
    if (o->store.empty() == o->run_dirs.empty()) fail("report: give --store URL or run folders (one of the two)");
    write_file_atomic(*out, report::report_html(*o));
    fmt::print("{}\n", *out);
    return 0;
  };
}

}  // namespace joule::cli
