#pragma once
// One run of a session with an observer attached for that run only.
#include "joule/runtime/session.h"

namespace joule::runtime {

// Runs `s` on `inputs` with `o` added, and clears the session's observers after it (also when
// the run throws).
TensorMap run_observed(Session& s, const TensorMap& inputs, Observer& o);

}  // namespace joule::runtime
