#pragma once
// The dashboard: an HTTP server over a results store (cpp-httplib), bound to 127.0.0.1 unless
// told otherwise. One page (inline HTML/CSS/JS, nothing fetched from elsewhere): experiments with
// live progress, the runs with filters, one run's details (metrics, per-layer time), two runs side
// by side (metrics and per-layer differences), and each experiment's HTML report. The page reads
// the JSON API, which scripts can use too:
//   GET /api/experiments            experiments with points done / failed / running
//   GET /api/runs[?experiment=&status=&model=]   runs without their full results
//   GET /api/runs/ID                one run in full (result, metrics, layers)
//   GET /report?experiment=NAME     the HTML report (report/report.h)
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "joule/api/hooks.h"

namespace joule::experiment {

struct ServeOptions {
  std::string store;              // results store URL
  std::string host = "127.0.0.1";
  int port = 8080;                // 0: any free port
};

// The responses, without a server (what the routes return; tests call them directly).
nlohmann::json api_experiments(const std::string& store);
nlohmann::json api_runs(const std::string& store, const std::string& experiment, const std::string& status,
                        const std::string& model);
nlohmann::json api_run(const std::string& store, int64_t id);  // null when there is none
const std::string& dashboard_html();

// Serves until hooks.cancelled() (checked every 100 ms). `ready` is called with the bound port
// once the server listens. BadInput when the store cannot be opened or the port is taken.
void serve(const ServeOptions& o, const api::Hooks& hooks, const std::function<void(int port)>& ready = {});

}  // namespace joule::experiment
