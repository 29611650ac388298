#pragma once
// Static work split for kernels that keep per-thread scratch.
#include <algorithm>
#include <cstdint>

#include "joule/core/thread_pool.h"

namespace joule::kernels {

// Calls f(slot, item) for every item in [0, items), split statically over at most
// min(pool.threads(), limit) slots; a slot is one parallel_for chunk and owns scratch `slot`.
// The std::function that parallel_for builds holds one pointer, so nothing is allocated.
template <class F>
void for_each_item(ThreadPool& pool, int limit, int64_t items, const F& f) {
  struct Ctx {
    const F* f;
    int64_t items, slots;
  } ctx{&f, items, std::min<int64_t>({pool.threads(), limit, items})};
  pool.parallel_for(ctx.slots, [&ctx](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t)
      for (int64_t i = ctx.items * t / ctx.slots; i < ctx.items * (t + 1) / ctx.slots; ++i) (*ctx.f)(t, i);
  });
}

}  // namespace joule::kernels
