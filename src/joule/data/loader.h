#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "joule/data/dataset.h"

namespace joule::data {

// Reads samples [first, first+count) on a background thread, `prefetch` ahead of the consumer, in order,
// so decoding overlaps inference. The range is clamped to the dataset's size.
class Loader {
 public:
  Loader(const Dataset& d, size_t first, size_t count, size_t prefetch = 16);
  ~Loader();  // stops and joins the thread even if not drained
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  std::optional<Sample> next();  // nullopt at the end; exceptions from get() are rethrown here (once)

 private:
  void run();

  const Dataset& dataset_;
  size_t first_, count_, prefetch_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Sample> ready_;
  std::exception_ptr error_;
  bool stop_ = false, finished_ = false;
  std::thread thread_;  // last: starts after the members it uses exist
};

}  // namespace joule::data
