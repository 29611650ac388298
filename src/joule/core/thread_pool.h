#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace joule {

// A fixed set of worker threads for intra-op parallelism. parallel_for splits [0, n) into at
// most threads() contiguous chunks; the calling thread runs one chunk itself. Nested calls
// from inside a chunk run serially.
class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }
  void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

  static int default_threads();  // cores available to this process

 private:
  void worker(int index);
  int threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_work_, cv_done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int job_chunks_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace joule
