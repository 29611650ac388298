#include "joule/core/thread_pool.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>

namespace joule {

int ThreadPool::default_threads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, threads)) {}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int chunks = static_cast<int>(std::min<int64_t>(threads_, n));
  if (chunks <= 1 || omp_in_parallel()) {
    fn(0, n);
    return;
  }
  std::exception_ptr error;
  std::mutex mu;
#pragma omp parallel num_threads(chunks)
  {
    const int c = omp_get_thread_num(), team = omp_get_num_threads();
    // The runtime may give fewer threads than asked: each thread then takes several chunks.
    for (int k = c; k < chunks; k += team) {
      const int64_t begin = n * k / chunks, end = n * (k + 1) / chunks;
      try {
        if (begin < end) fn(begin, end);
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu);
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace joule
