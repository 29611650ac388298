#pragma once
// What a caller hands every workflow besides its options: a progress callback (the CLI draws
// a status line from it, Python calls a function or updates tqdm) and a cancellation check
// polled between runs, samples, layers and steps (Ctrl-C in the CLI and in Python, a search's
// time budget). Workflows never print.
#include <cstddef>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace joule::api {

struct Progress {
  std::string stage;    // "calibrating", "evaluating fp32", "profiling", "ranking", "automp", ...
  size_t done = 0;      // units of `stage` finished
  size_t total = 0;     // 0: not known
  std::string message;  // one line for people, e.g. "evaluating fp32: 200/10000"
};

struct Hooks {
  std::function<void(const Progress&)> progress;
  // Returns true when the caller wants the workflow to stop; the workflow then throws
  // joule::Error of kind Cancelled at its next check (what it wrote so far stays valid).
  std::function<bool()> cancelled;
  // Structured records as a workflow makes them (training: one per step and one per epoch).
  std::function<void(const nlohmann::json&)> record;

  // Throws Cancelled when cancelled() says so.
  void check() const;
  // Reports progress (when a callback is set), then check().
  void report(const std::string& stage, size_t done, size_t total, const std::string& message) const;
};

}  // namespace joule::api
