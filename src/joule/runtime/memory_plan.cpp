#include "joule/runtime/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace joule::runtime {

MemoryPlan plan_memory(const std::vector<PlannedValue>& values, size_t align) {
  const size_t n = values.size();
  MemoryPlan plan;
  plan.offset.assign(n, -1);
  // Buffers: a value and the views of it; a view of an unplanned value is unplanned.
  std::vector<int> root(n);
  std::iota(root.begin(), root.end(), 0);
  auto find = [&](int v) {
    while (root[static_cast<size_t>(v)] != v) v = root[static_cast<size_t>(v)];
    return v;
  };
  for (size_t v = 0; v < n; ++v)
    if (values[v].alias_of >= 0) root[v] = find(values[v].alias_of);
  struct Buffer {
    size_t bytes = 0;
    int first = 0, last = 0;
    bool ok = true;
    long long offset = -1;
  };
  std::vector<Buffer> buf(n);
  std::vector<bool> used(n, false);
  for (size_t v = 0; v < n; ++v) {
    const size_t r = static_cast<size_t>(find(static_cast<int>(v)));
    Buffer& b = buf[r];
    const PlannedValue& pv = values[v];
    if (!used[r]) {
      used[r] = true;
      b.first = pv.def;
      b.last = pv.last;
    }
    if (pv.bytes == 0) b.ok = false;
    b.bytes = std::max(b.bytes, pv.bytes);
    b.first = std::min(b.first, pv.def);
    b.last = std::max(b.last, pv.last);
  }
  // In place: the value's buffer joins its input's when both are planned, the input's buffer
  // is last read where the value is made, and the value's buffer starts there. In order of
  // production, so that chains (y over x, z over y) join one by one.
  std::vector<size_t> by_def(n);
  std::iota(by_def.begin(), by_def.end(), 0);
  std::stable_sort(by_def.begin(), by_def.end(), [&](size_t a, size_t b) { return values[a].def < values[b].def; });
  for (size_t v : by_def) {
    if (values[v].reuse_of < 0) continue;
    const size_t ri = static_cast<size_t>(find(values[v].reuse_of)), rv = static_cast<size_t>(find(static_cast<int>(v)));
    Buffer& in = buf[ri];
    Buffer& out = buf[rv];
    // (ok: every member planned, so bytes > 0.)
    if (ri == rv || !in.ok || !out.ok || in.bytes < out.bytes || in.last != values[v].def || out.first != values[v].def)
      continue;
    root[rv] = static_cast<int>(ri);
    used[rv] = false;
    in.last = std::max(in.last, out.last);
  }
  std::vector<size_t> order;
  for (size_t r = 0; r < n; ++r)
    if (used[r] && buf[r].ok && buf[r].bytes > 0) order.push_back(r);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return buf[a].bytes > buf[b].bytes; });
  std::vector<size_t> placed;
  for (size_t r : order) {
    Buffer& b = buf[r];
    const size_t size = (b.bytes + align - 1) / align * align;
    // Memory ranges of placed buffers alive at the same time, by offset.
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t q : placed)
      if (buf[q].first <= b.last && b.first <= buf[q].last)
        busy.emplace_back(static_cast<size_t>(buf[q].offset), static_cast<size_t>(buf[q].offset) +
                                                                  (buf[q].bytes + align - 1) / align * align);
    std::sort(busy.begin(), busy.end());
    size_t at = 0;
    for (auto& [lo, hi] : busy) {
      if (at + size <= lo) break;  // fits in the gap before this range
      at = std::max(at, hi);
    }
    b.offset = static_cast<long long>(at);
    placed.push_back(r);
    plan.arena_bytes = std::max(plan.arena_bytes, at + size);
    plan.naive_bytes += size;
    ++plan.planned_buffers;
  }
  for (size_t v = 0; v < n; ++v) {
    const Buffer& b = buf[static_cast<size_t>(find(static_cast<int>(v)))];
    if (b.ok && b.offset >= 0) plan.offset[v] = b.offset;
  }
  return plan;
}

}  // namespace joule::runtime
