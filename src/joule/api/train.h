#pragma once
// Training on joule's engine: the model's training graph (train/train_graph.h) run by a Session
// step after step on shuffled, augmented batches, the weights updated in place by the optimizer,
// validation after every epoch, checkpoints that resume exactly, and the trained weights
// written back into the model.
#include <string>
#include <vector>

#include "joule/api/data.h"
#include "joule/api/hooks.h"
#include "joule/api/prepare.h"
#include "joule/api/quantize.h"
#include "joule/train/batches.h"
#include "joule/train/lora.h"
#include "joule/train/optimizer.h"

namespace joule::api {

struct TrainOptions {
  DataSource data;                  // labelled training data (required)
  DataSource val;                   // labelled data evaluated after every epoch (optional)
  size_t val_samples = 0;           // the first N of val (0: all)
  DataOptions preprocess;
  std::string loss = "cross_entropy";  // cross_entropy | mse | l1 (mse and l1 against one-hot labels)
                                    // | kd (distillation from `teacher`, with the labels)
  Model teacher;                    // kd: its scores on every batch (its own engine session)
  double kd_temperature = 4, kd_alpha = 0.5;
  std::string bn = "train";         // train (batch statistics) | frozen (running statistics)
  std::string init = "keep";        // keep (the model's weights) | random (train/init.h)
  train::OptimizerOptions optimizer;
  train::ScheduleOptions schedule;
  int64_t batch = 32;
  int64_t epochs = 1;
  int64_t steps = 0;                // > 0: this many steps instead of whole epochs
  bool shuffle = true;
  uint64_t seed = 0;                // shuffling, augmentation, dropout and random init
  train::Augment augment;
  int threads = 0;                  // 0: every core
  AlgoOptions algo;                 // kernels of the training graph
  std::string checkpoint;           // written after every epoch and every checkpoint_every steps
  int64_t checkpoint_every = 0;
  std::string resume;               // a checkpoint of this run to continue from
  std::vector<std::string> trainable, frozen;  // initializers trained (empty: all) / never trained
  // The weights of Conv/ConvTranspose/Gemm/MatMul that are zero at the start stay zero (the mask
  // of unstructured pruning): their gradients are masked before every update.
  bool keep_zeros = false;
};

struct TrainReport {
  Model model;                      // the model with the trained weights (and BatchNorm statistics)
  nlohmann::json json;              // settings, per-epoch records, the last step's, timings
  nlohmann::json to_json() const { return json; }
};

TrainReport train(const Model& m, const TrainOptions& o, const Hooks& hooks = {});

// The graph train() runs at every step for these options (the batch from o.batch and the data's
// sample shape): inputs the data, the labels, the weights (and BatchNorm statistics); outputs the
// loss, the prediction, the gradients. `joule profile` times a training step on it.
Model training_graph(const Model& m, const TrainOptions& o);

// LoRA fine-tuning: low-rank adapters added to the chosen layers (train/lora.h), only they are
// trained, then merged into the weights. The report gains "lora" (rank, scale, adapted layers,
// values trained against the model's).
struct FinetuneOptions {
  TrainOptions train;
  train::LoraOptions lora;
};
TrainReport finetune(const Model& m, const FinetuneOptions& o, const Hooks& hooks = {});

// Quantization-aware training: the model prepared and calibrated as quantize does it (BatchNorm
// folded into the weights), every quantized tensor behind a FakeQuant whose gradient is
// straight-through with clipping; with lsq or pact the scales train too. The result is exported
// as quantize exports (standard ONNX QDQ for 8-bit integers, which runs on joule's integer
// kernels and in ONNX Runtime; FakeQuant for other formats). With quant.eval, the report's
// "qat" compares FP32, post-training quantization and QAT accuracy.
struct QatOptions {
  QuantOptions quant;          // config; calib defaults to the training data
  TrainOptions train;
  std::string method = "lsq";  // ste | lsq | pact | tqt
};
TrainReport qat(const Model& m, const QatOptions& o, const Hooks& hooks = {});

// One forward and backward pass on given data, nothing updated: the loss, the model's output and
// the gradient of every trained weight (by initializer name). For checks against other
// frameworks, saliency, and debugging a training setup.
struct GradientsOptions {
  runtime::TensorMap inputs;  // the model's inputs (their shapes fix the batch)
  Tensor target;              // cross_entropy: int64 labels; mse/l1: float targets of the output's shape
  std::string loss = "cross_entropy";
  std::string bn = "train";
  std::vector<std::string> trainable, frozen;
  int threads = 1;
  uint64_t seed = 0;          // dropout
};
struct GradientsResult {
  double loss = 0;
  Tensor output;
  std::map<std::string, Tensor> grads;
  std::map<std::string, Tensor> running_stats;  // BatchNorm's updated statistics (bn train)
};
GradientsResult gradients(const Model& m, const GradientsOptions& o);

}  // namespace joule::api
