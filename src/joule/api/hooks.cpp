#include "joule/api/hooks.h"

#include "joule/core/error.h"

namespace joule::api {

void Hooks::check() const {
  if (cancelled && cancelled()) throw Error(Error::Kind::Cancelled, "cancelled");
}

void Hooks::report(const std::string& stage, size_t done, size_t total, const std::string& message) const {
  if (progress) progress(Progress{stage, done, total, message});
  check();
}

}  // namespace joule::api
