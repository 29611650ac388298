#include "joule/runtime/observed.h"

namespace joule::runtime {

TensorMap run_observed(Session& s, const TensorMap& inputs, Observer& o) {
  s.add_observer(&o);
  try {
    TensorMap out = s.run(inputs);
    s.clear_observers();
    return out;
  } catch (...) {
    s.clear_observers();
    throw;
  }
}

}  // namespace joule::runtime
