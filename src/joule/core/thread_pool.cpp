#include "joule/core/thread_pool.h"

#include <sched.h>

#include <algorithm>

namespace joule {

namespace {
thread_local bool t_in_pool_job = false;

void run_chunk(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int chunks, int c) {
  int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
  if (begin < end) fn(begin, end);
}
}  // namespace

int ThreadPool::default_threads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, threads)) {
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_work_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n;
    int chunks;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_work_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
      chunks = job_chunks_;
    }
    if (index < chunks) {
      t_in_pool_job = true;
      run_chunk(*job, n, chunks, index);
      t_in_pool_job = false;
    }
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (--pending_ == 0) cv_done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  int chunks = static_cast<int>(std::min<int64_t>(threads_, n));
  if (chunks <= 1 || t_in_pool_job) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    job_ = &fn;
    job_n_ = n;
    job_chunks_ = chunks;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  cv_work_.notify_all();
  t_in_pool_job = true;
  run_chunk(fn, n, chunks, 0);
  t_in_pool_job = false;
  std::unique_lock<std::mutex> lk(mu_);
  cv_done_.wait(lk, [&] { return pending_ == 0; });
}

}  // namespace joule
