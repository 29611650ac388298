#pragma once
// Training batches: samples of a dataset in a given order, assembled into [B, ...] inputs with
// integer labels, augmented (random crop with padding, horizontal flip) and read ahead on a
// background thread. Every sample's augmentation draws from a hash of (seed, epoch, index), so
// a batch is the same whatever the threads and wherever a run resumes.
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "joule/data/dataset.h"

namespace joule::train {

struct Augment {
  bool hflip = false;    // flip along the last axis with probability 1/2
  int crop_padding = 0;  // pad the last two axes by this much (with the sample's per-channel minimum,
                         // the background of normalised images) and crop a random window back
};

struct Batch {
  Tensor inputs;  // [B, sample shape...] float32
  Tensor labels;  // [B] int64
};

class BatchLoader {
 public:
  // Batches of `batch` samples taken in `order` (a last partial batch is dropped).
  BatchLoader(const data::Dataset& d, std::vector<size_t> order, int64_t batch, Augment a, uint64_t seed,
              int64_t epoch, size_t first_batch = 0, size_t prefetch = 2);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  std::optional<Batch> next();  // nullopt at the end; errors reading a sample are rethrown here
  size_t batches() const { return order_.size() / static_cast<size_t>(batch_); }

 private:
  void run();
  Batch make(size_t b) const;

  const data::Dataset& d_;
  std::vector<size_t> order_;
  int64_t batch_;
  Augment aug_;
  uint64_t seed_;
  int64_t epoch_;
  size_t next_, prefetch_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> ready_;
  std::exception_ptr error_;
  bool stop_ = false, finished_ = false;
  std::thread thread_;
};

// The sample order of an epoch: 0..n-1, shuffled by a generator seeded from (seed, epoch).
std::vector<size_t> epoch_order(size_t n, bool shuffle, uint64_t seed, int64_t epoch);

}  // namespace joule::train
