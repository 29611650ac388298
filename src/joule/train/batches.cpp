#include "joule/train/batches.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "joule/core/error.h"

namespace joule::train {

namespace {

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Random crop (after padding) and flip of one [.., H, W] sample in place.
void augment(Tensor& x, const Augment& a, uint64_t key) {
  if (x.rank() < 2 || (!a.hflip && a.crop_padding == 0)) return;
  std::mt19937_64 rng(key);
  const int64_t h = x.dim(-2), w = x.dim(-1), planes = x.numel() / (h * w), p = a.crop_padding;
  float* v = x.data<float>();
  std::vector<float> plane(static_cast<size_t>(h * w));
  const int64_t dy = p ? static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * p + 1)) - p : 0;
  const int64_t dx = p ? static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * p + 1)) - p : 0;
  const bool flip = a.hflip && (rng() & 1);
  for (int64_t c = 0; c < planes; ++c) {
    float* q = v + c * h * w;
    std::copy(q, q + h * w, plane.begin());
    const float fill = *std::min_element(plane.begin(), plane.end());
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j) {
        const int64_t si = i + dy, sj = (flip ? w - 1 - j : j) + dx;
        q[i * w + j] = si >= 0 && si < h && sj >= 0 && sj < w ? plane[static_cast<size_t>(si * w + sj)] : fill;
      }
  }
}

}  // namespace

std::vector<size_t> epoch_order(size_t n, bool shuffle, uint64_t seed, int64_t epoch) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  if (shuffle) {
    std::mt19937_64 rng(mix(seed ^ mix(static_cast<uint64_t>(epoch) + 1)));
    for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);  // Fisher-Yates, fixed everywhere
  }
  return order;
}

BatchLoader::BatchLoader(const data::Dataset& d, std::vector<size_t> order, int64_t batch, Augment a, uint64_t seed,
                         int64_t epoch, size_t first_batch, size_t prefetch)
    : d_(d), order_(std::move(order)), batch_(batch), aug_(a), seed_(seed), epoch_(epoch), next_(first_batch),
      prefetch_(std::max<size_t>(1, prefetch)) {
  if (batch_ < 1) fail("batch size must be at least 1");
  if (!d_.has_labels()) fail("training: " + d_.describe() + " has no labels");
  thread_ = std::thread([this] { run(); });
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Batch BatchLoader::make(size_t b) const {
  Batch r;
  Tensor first;
  for (int64_t j = 0; j < batch_; ++j) {
    const size_t idx = order_[b * static_cast<size_t>(batch_) + static_cast<size_t>(j)];
    data::Sample s = d_.get(idx);
    if (!s.error.empty()) fail("training data: " + s.error);
    if (!r.inputs.defined()) {
      Shape shape = s.input.shape();
      shape.insert(shape.begin(), batch_);
      r.inputs = Tensor(DType::Float32, shape);
      r.labels = Tensor(DType::Int64, {batch_});
    }
    augment(s.input, aug_, mix(seed_ ^ mix(static_cast<uint64_t>(epoch_) * 0x100000001ull + idx)));
    const size_t per = static_cast<size_t>(s.input.numel());
    std::memcpy(r.inputs.data<float>() + static_cast<size_t>(j) * per, s.input.data<float>(), per * sizeof(float));
    r.labels.data<int64_t>()[j] = s.label;
  }
  return r;
}

void BatchLoader::run() {
  try {
    for (size_t b = next_; b < batches(); ++b) {
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || ready_.size() < prefetch_; });
        if (stop_) return;
      }
      Batch batch = make(b);
      {
        std::lock_guard<std::mutex> lk(mu_);
        ready_.push_back(std::move(batch));
      }
      cv_.notify_all();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lk(mu_);
    error_ = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    finished_ = true;
  }
  cv_.notify_all();
}

std::optional<Batch> BatchLoader::next() {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [&] { return !ready_.empty() || finished_; });
  if (!ready_.empty()) {
    Batch b = std::move(ready_.front());
    ready_.pop_front();
    lk.unlock();
    cv_.notify_all();
    return b;
  }
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
  return std::nullopt;
}

}  // namespace joule::train
