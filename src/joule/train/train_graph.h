#pragma once
// A model made trainable: one graph that computes the loss and the gradient of every trained
// weight, run by an ordinary Session. The trained weights become graph inputs (so every kernel
// reads them at run time and the optimizer updates them in place between steps); BatchNorm in
// training mode computes batch statistics and returns the updated running statistics; Dropout
// draws its mask from a seed input.
#include <map>
#include <string>
#include <vector>

#include "joule/ir/graph.h"

namespace joule::train {

struct TrainGraphOptions {
  std::string loss = "cross_entropy";         // cross_entropy (integer labels) | mse | l1 (float targets)
                                              // | kd (distillation: labels and a teacher's scores)
  double kd_temperature = 4, kd_alpha = 0.5;  // kd: alpha * CE + (1 - alpha) * T^2 * KL(teacher_T || student_T)
  std::string bn = "train";                   // train (batch statistics) | frozen (running statistics)
  std::map<std::string, Shape> input_shapes;  // static shapes of the model's inputs (the batch)
  std::vector<std::string> trainable;         // initializers to train; empty: every float initializer
                                              // the loss depends on (BatchNorm's running statistics excepted)
  std::vector<std::string> frozen;            // initializers never trained
  std::string output;                         // the model output the loss reads ("": the first)
};

struct TrainGraph {
  ir::Graph graph;
  std::string loss;                  // output: the scalar loss
  std::string output;                // output: the model's prediction (for accuracy)
  std::string target;                // input: labels (int64, the output's shape without dim 1) or targets
  std::string teacher;               // input (kd): the teacher's scores, the output's shape
  std::vector<std::string> inputs;   // the model's own inputs
  std::vector<std::string> params;   // inputs: the trained initializers (the model's names)
  std::vector<std::string> grads;    // outputs: the gradient of each param, in the same order
  struct State {
    std::string input, output;       // BatchNorm running statistic: read, and its update
  };
  std::vector<State> state;
  std::string dropout_seed;          // input (int64 scalar), "" when no Dropout trains
  std::vector<std::string> unused;   // float initializers the loss does not depend on (kept constant)
};

// The model with every Identity of a float initializer replaced by an initializer of its own
// (a copy, named as the Identity's output): PyTorch's exporter stores equal parameters once (all
// LayerNorm scales of ones, all BatchNorm running means of zeros) behind such Identities, and
// training them shared would tie weights the model never tied. Returns how many were untied.
size_t untie_initializers(ir::Graph& g);

// Throws BadInput for an unknown loss/bn mode, a trainable name that is no float initializer, a
// model output that does not fit the loss; Unsupported listing every op without a gradient rule.
TrainGraph build_train_graph(const ir::Graph& model, const TrainGraphOptions& o);

}  // namespace joule::train
