#include <fmt/core.h>

#include "joule/cli/commands.h"
#include "joule/cli/util.h"
#include "joule/core/error.h"
#include "joule/experiment/serve.h"

namespace joule::cli {

Action add_serve(CLI::App& app) {
  auto o = std::make_shared<experiment::ServeOptions>();
  app.add_option("--store", o->store, "results store (an SQLite file)")->required();
  app.add_option("--port", o->port, "TCP port (0: any free one)")->capture_default_str()->check(CLI::Range(0, 65535));
  app.add_option("--host", o->host, "address to bind (default: this machine only)")->capture_default_str();
  return [o] {
    try {
      experiment::serve(*o, terminal_hooks(true), [&](int port) {
        fmt::print("serving {} at http://{}:{}/ (Ctrl-C stops)\n", o->store, o->host, port);
        std::fflush(stdout);
      });
    } catch (const Error& e) {
      if (e.kind() != Error::Kind::Cancelled) throw;
    }
    return 0;
  };
}

}  // namespace joule::cli
