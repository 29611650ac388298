#pragma once
// One self-contained HTML report (inline CSS, inline SVG, a few lines of inline script to sort
// tables; nothing fetched) of runs: those of an experiment (or all) in a results store, or run
// folders (each with the result.json an experiment point writes). It holds the runs' table
// (parameters, status, headline metrics; click a header to sort), accuracy against latency and
// energy with the Pareto front, sweep curves over each numeric grid axis, the main latency by
// model and configuration, per-layer time and op-type shares of profiled runs, per-layer
// quantization sensitivity, and each run's details.
#include <string>
#include <vector>

#include "joule/experiment/store.h"

namespace joule::report {

struct ReportOptions {
  std::string store;                  // results store URL ("" when run_dirs are given)
  std::string experiment;             // "" every run in the store
  std::vector<std::string> run_dirs;  // folders with result.json (instead of a store)
  std::string title;                  // "" from the experiment or the folders
  size_t layer_runs = 12;             // per-layer charts for at most this many runs
};

// The runs a report draws (from the store or the folders); BadInput when there are none.
std::vector<experiment::RunRow> report_runs(const ReportOptions& o);
std::string report_html(const ReportOptions& o);

}  // namespace joule::report
