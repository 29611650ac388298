#include "joule/train/optimizer.h"

#include <cmath>

#include "joule/core/error.h"

namespace joule::train {

namespace {

constexpr double kPi = 3.141592653589793;

// Runs f(begin, end) over [0, n) in chunks on the pool.
template <class F>
void chunks(ThreadPool* pool, int64_t n, const F& f) {
  constexpr int64_t kChunk = 1 << 14;
  const int64_t parts = (n + kChunk - 1) / kChunk;
  auto body = [&](int64_t b, int64_t e) { f(b * kChunk, std::min(n, e * kChunk)); };
  if (pool && parts > 1) pool->parallel_for(parts, body);
  else body(0, parts);
}

}  // namespace

void check(const OptimizerOptions& o) {
  if (o.name != "sgd" && o.name != "adam" && o.name != "adamw")
    fail("optimizer '" + o.name + "' (sgd, adam or adamw)");
  if (!(o.lr > 0)) fail("learning rate must be positive, got " + std::to_string(o.lr));
  if (o.momentum < 0 || o.momentum >= 1) fail("momentum must be in [0, 1), got " + std::to_string(o.momentum));
  if (o.nesterov && o.momentum == 0) fail("nesterov needs a momentum");
  if (o.weight_decay < 0) fail("weight decay must not be negative");
  if (o.beta1 < 0 || o.beta1 >= 1 || o.beta2 < 0 || o.beta2 >= 1) fail("betas must be in [0, 1)");
  if (o.clip_grad_norm < 0) fail("gradient clipping norm must not be negative");
}

void check(const ScheduleOptions& s) {
  if (s.name != "constant" && s.name != "step" && s.name != "cosine")
    fail("schedule '" + s.name + "' (constant, step or cosine)");
  if (s.name == "step" && s.step_size <= 0) fail("the step schedule needs a positive step size");
  if (s.warmup_steps < 0) fail("warm-up steps must not be negative");
}

double learning_rate(double base, const ScheduleOptions& s, int64_t step, int64_t total) {
  if (step < s.warmup_steps) return base * static_cast<double>(step + 1) / static_cast<double>(s.warmup_steps);
  const int64_t k = step - s.warmup_steps, span = std::max<int64_t>(1, total - s.warmup_steps);
  if (s.name == "step") return base * std::pow(s.gamma, static_cast<double>(k / s.step_size));
  if (s.name == "cosine")
    return s.min_lr + 0.5 * (base - s.min_lr) * (1 + std::cos(kPi * static_cast<double>(std::min(k, span)) / static_cast<double>(span)));
  return base;
}

Optimizer::Optimizer(OptimizerOptions o) : o_(std::move(o)) { check(o_); }

double Optimizer::step(std::vector<Tensor>& params, const std::vector<Tensor>& grads, double lr, ThreadPool* pool) {
  if (params.size() != grads.size()) fail_internal("optimizer: params and grads differ in number");
  if (m_.empty()) {
    for (const Tensor& p : params) {
      m_.emplace_back(DType::Float32, p.shape());
      v_.push_back(o_.name == "sgd" ? Tensor() : Tensor(DType::Float32, p.shape()));
    }
  }
  ++t_;
  double sq = 0;
  for (const Tensor& g : grads) {
    const float* gp = g.data<float>();
    for (int64_t i = 0; i < g.numel(); ++i) sq += static_cast<double>(gp[i]) * gp[i];
  }
  const double norm = std::sqrt(sq);
  const float clip = o_.clip_grad_norm > 0 && norm > o_.clip_grad_norm ? static_cast<float>(o_.clip_grad_norm / (norm + 1e-6)) : 1.f;
  const float flr = static_cast<float>(lr), wd = static_cast<float>(o_.weight_decay);
  const float mom = static_cast<float>(o_.momentum), b1 = static_cast<float>(o_.beta1), b2 = static_cast<float>(o_.beta2);
  const float eps = static_cast<float>(o_.eps);
  const float c1 = static_cast<float>(1 - std::pow(o_.beta1, static_cast<double>(t_)));
  const float c2s = static_cast<float>(std::sqrt(1 - std::pow(o_.beta2, static_cast<double>(t_))));
  const bool first = t_ == 1;
  for (size_t k = 0; k < params.size(); ++k) {
    if (params[k].dtype() != DType::Float32 || grads[k].shape() != params[k].shape())
      fail_internal("optimizer: parameter " + std::to_string(k) + " is " + params[k].describe() + ", its gradient " +
                    grads[k].describe());
    float* p = params[k].data<float>();
    const float* g = grads[k].data<float>();
    float* m = m_[k].data<float>();
    float* v = v_[k].defined() ? v_[k].data<float>() : nullptr;
    chunks(pool, params[k].numel(), [&](int64_t b, int64_t e) {
      if (o_.name == "sgd") {
        for (int64_t i = b; i < e; ++i) {
          float d = g[i] * clip + wd * p[i];
          if (mom != 0) {
            m[i] = first ? d : mom * m[i] + d;
            d = o_.nesterov ? d + mom * m[i] : m[i];
          }
          p[i] -= flr * d;
        }
      } else {
        const bool decoupled = o_.name == "adamw";
        for (int64_t i = b; i < e; ++i) {
          float d = g[i] * clip;
          if (decoupled) p[i] *= 1 - flr * wd;
          else d += wd * p[i];
          m[i] = b1 * m[i] + (1 - b1) * d;
          v[i] = b2 * v[i] + (1 - b2) * d * d;
          // PyTorch's form: lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
          p[i] -= flr / c1 * m[i] / (std::sqrt(v[i]) / c2s + eps);
        }
      }
    });
  }
  return norm;
}

std::map<std::string, Tensor> Optimizer::state() const {
  std::map<std::string, Tensor> s;
  for (size_t k = 0; k < m_.size(); ++k) {
    s[std::to_string(k) + (o_.name == "sgd" ? "/momentum" : "/m")] = m_[k];
    if (v_[k].defined()) s[std::to_string(k) + "/v"] = v_[k];
  }
  return s;
}

void Optimizer::load_state(const std::map<std::string, Tensor>& s, int64_t steps_taken, size_t params) {
  m_.clear();
  v_.clear();
  t_ = steps_taken;
  if (steps_taken == 0) return;
  for (size_t k = 0; k < params; ++k) {
    auto get = [&](const std::string& key) {
      auto it = s.find(std::to_string(k) + key);
      if (it == s.end()) fail("checkpoint: optimizer state '" + std::to_string(k) + key + "' is missing (another optimizer?)");
      return it->second.clone();
    };
    m_.push_back(get(o_.name == "sgd" ? "/momentum" : "/m"));
    v_.push_back(o_.name == "sgd" ? Tensor() : get("/v"));
  }
}

}  // namespace joule::train
