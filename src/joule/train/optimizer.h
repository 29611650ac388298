#pragma once
// Optimizers (SGD with momentum/Nesterov, Adam, AdamW, as PyTorch defines them), learning-rate
// schedules and gradient clipping, over float32 parameter tensors updated in place.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "joule/core/tensor.h"
#include "joule/core/thread_pool.h"

namespace joule::train {

struct OptimizerOptions {
  std::string name = "sgd";   // sgd | adam | adamw
  double lr = 0.01;
  double momentum = 0.9;      // sgd (0: plain SGD)
  bool nesterov = false;      // sgd
  double weight_decay = 0;    // sgd, adam: L2 added to the gradient; adamw: decoupled decay
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // adam, adamw
  double clip_grad_norm = 0;  // > 0: gradients scaled so that their global L2 norm is at most this
};

struct ScheduleOptions {
  std::string name = "constant";  // constant | step | cosine
  int64_t warmup_steps = 0;       // linear warm-up from lr / warmup_steps to lr first
  int64_t step_size = 0;          // step: lr * gamma^(k) after every step_size steps
  double gamma = 0.1;
  double min_lr = 0;              // cosine: the learning rate at the last step
};

// BadInput for an unknown optimizer or schedule, or values out of range.
void check(const OptimizerOptions& o);
void check(const ScheduleOptions& s);

// The learning rate of step `step` (0-based) of `total` steps.
double learning_rate(double base, const ScheduleOptions& s, int64_t step, int64_t total);

class Optimizer {
 public:
  explicit Optimizer(OptimizerOptions o);
  // One update of every parameter (in place) from its gradient at learning rate `lr`. Returns
  // the global L2 norm of the gradients (before clipping).
  double step(std::vector<Tensor>& params, const std::vector<Tensor>& grads, double lr, ThreadPool* pool);
  int64_t steps_taken() const { return t_; }

  // Optimizer state by name ("<param index>/momentum", "/m", "/v") for checkpoints, and back.
  std::map<std::string, Tensor> state() const;
  void load_state(const std::map<std::string, Tensor>& s, int64_t steps_taken, size_t params);

 private:
  OptimizerOptions o_;
  std::vector<Tensor> m_, v_;  // momentum buffer (sgd) or first moment; second moment (adam)
  int64_t t_ = 0;
};

}  // namespace joule::train
