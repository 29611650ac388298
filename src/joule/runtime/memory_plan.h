#pragma once
// Static memory planning of activations (TFLite's greedy-by-size arena): every intermediate
// value with a static shape gets an offset in one arena, so that values alive at the same
// step never overlap and dead values' bytes are reused. A value that may be a view of its
// input (OpDef::view) shares its input's buffer, and so may one computed in place over an input
// read for the last time (PlannedValue::reuse_of); graph outputs are never planned (they
// outlive the run).
#include <cstddef>
#include <vector>

namespace joule::runtime {

struct PlannedValue {
  size_t bytes = 0;      // 0: not planned (dynamic shape, constant, input, graph output)
  int def = -1;          // step that produces it
  int last = -1;         // last step that reads it (>= def)
  int alias_of = -1;     // index of the value whose buffer it may share, or -1
  // Index of an input whose buffer this value may take over (its producer computes in place,
  // Kernel::may_overwrite_input), or -1: granted when that buffer's last reader is this value's
  // producer, and nothing else holds this value's buffer earlier.
  int reuse_of = -1;
};

struct MemoryPlan {
  std::vector<long long> offset;  // per value; -1 when not planned
  size_t arena_bytes = 0;         // the arena this plan needs
  size_t naive_bytes = 0;         // every planned buffer separate (no reuse)
  size_t planned_buffers = 0;
};

// `values` indexed like MemoryPlan::offset. Offsets are multiples of `align`.
MemoryPlan plan_memory(const std::vector<PlannedValue>& values, size_t align = 64);

}  // namespace joule::runtime
