#pragma once
#include <cstdint>
#include <functional>

namespace joule {

// Intra-op parallelism on OpenMP threads, the same team oneDNN uses, so joule's kernels and
// the vendor library never compete for cores (and a thread that just left a oneDNN region is
// the one that picks up joule's next chunk). parallel_for splits [0, n) into at most threads()
// contiguous chunks, one per team thread (the calling thread runs the first). Nested calls
// from inside a chunk run serially. An exception thrown by a chunk is rethrown to the caller.
class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }
  void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

  static int default_threads();  // cores available to this process

 private:
  int threads_;
};

}  // namespace joule
