#include "joule/data/loader.h"

#include <algorithm>
#include <utility>

namespace joule::data {

Loader::Loader(const Dataset& d, size_t first, size_t count, size_t prefetch)
    : dataset_(d),
      first_(std::min(first, d.size())),
      count_(std::min(count, d.size() - std::min(first, d.size()))),
      prefetch_(std::max<size_t>(prefetch, 1)),
      thread_([this] { run(); }) {}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();  // at most one get() still in flight
}

void Loader::run() {
  for (size_t i = 0; i < count_; ++i) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || ready_.size() < prefetch_; });
      if (stop_) return;
    }
    try {
      Sample s = dataset_.get(first_ + i);  // outside the lock: the consumer keeps taking samples
      std::lock_guard<std::mutex> lock(mu_);
      ready_.push_back(std::move(s));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = std::current_exception();
      finished_ = true;
      cv_.notify_all();
      return;
    }
    cv_.notify_all();
  }
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
  cv_.notify_all();
}

std::optional<Sample> Loader::next() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !ready_.empty() || finished_; });
  if (!ready_.empty()) {  // samples read before a failure are still delivered, in order
    Sample s = std::move(ready_.front());
    ready_.pop_front();
    lock.unlock();
    cv_.notify_all();
    return s;
  }
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  return std::nullopt;
}

}  // namespace joule::data
