#pragma once
#include <cstdint>

#include "joule/runtime/session.h"

namespace joule::runtime {

// Deterministic synthetic inputs for every graph input (normal(0,1) floats, zeros for
// integers), at the session's input shapes. Throws BadInput naming an input whose shape
// is not static (give --input-shape or real inputs then).
TensorMap random_inputs(const Session& s, uint32_t seed = 0);

}  // namespace joule::runtime
