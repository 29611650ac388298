#pragma once
// What RNN, GRU and LSTM share: their attributes read once into a Spec (directions, hidden
// size, the activation list with alpha/beta, clip, layout, ...), shape inference, the layout of
// their inputs, and the driver that walks directions, batch entries and time steps (honouring
// sequence_lens, initial states and layout) around one op's cell. The reference kernels
// (lstm.cpp, gru.cpp, rnn.cpp) give the driver a scalar cell; the fast kernel
// (kernels/recurrent/) computes the same equations with GEMMs.
//
// Inputs: X, W, R, B, sequence_lens, initial_h, then LSTM's initial_c and P (peepholes).
// Outputs: Y [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]), Y_h and LSTM's
// Y_c [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]).
#include <functional>
#include <string>
#include <vector>

#include "joule/ops/op.h"

namespace joule::ops::recurrent {

enum class Kind { kRnn, kGru, kLstm };

enum class Fn { kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu, kSoftsign, kSoftplus };

struct Activation {
  Fn fn = Fn::kTanh;
  float alpha = 0, beta = 0;
};

struct Spec {
  Kind kind = Kind::kLstm;
  int gates = 4;                // RNN 1, GRU 3, LSTM 4
  int acts_per_dir = 3;         // RNN 1, GRU 2, LSTM 3
  int64_t hidden = 0;
  int dirs = 1;
  bool reverse = false;         // direction = reverse (dirs == 1)
  std::vector<Activation> acts; // dirs * acts_per_dir, direction-major
  float clip = 0;               // > 0: gate pre-activations clamped to [-clip, clip]
  bool input_forget = false;    // LSTM: f = 1 - i
  bool linear_before_reset = false;  // GRU
  bool batch_major = false;     // layout = 1

  const Activation& act(int dir, int k) const { return acts[static_cast<size_t>(dir * acts_per_dir + k)]; }
  bool dir_reversed(int dir) const { return dir == 1 || reverse; }
};

// Reads and checks the node's attributes; throws BadInput naming the node.
Spec parse(const ir::Node& n, Kind kind);
// "" when supported; the reason otherwise (an unknown activation name, ...).
std::string check(const ir::Node& n, Kind kind);

// Scalar activation (libm), for the reference kernels.
float activate(const Activation& a, float x);
inline float clip_value(float x, float clip) { return clip > 0 ? (x < -clip ? -clip : (x > clip ? clip : x)) : x; }

void infer(InferContext& c, Kind kind);
Cost cost(const CostContext& c, Kind kind);

// Sizes read from X; sequence_lens and the initial states checked against them, and W, R, B
// and P when `weights` (a fast kernel that packed its own copies checks those at prepare time).
struct Dims {
  int64_t seq = 0, batch = 0, input = 0;
};
Dims dims_of(const KernelContext& c, const Spec& s, bool weights);

// sequence_lens as int64 per batch entry (seq when absent); checked to lie in [0, seq].
std::vector<int64_t> sequence_lengths(const KernelContext& c, const Dims& d);

// Offsets into X and Y of (time t, batch b), for either layout.
struct Layout {
  Dims d;
  int dirs = 1;
  int64_t hidden = 0;
  bool batch_major = false;
  int64_t x_row(int64_t t, int64_t b) const { return batch_major ? b * d.seq + t : t * d.batch + b; }
  // Y's offset of (t, dir, b, 0).
  int64_t y_off(int64_t t, int dir, int64_t b) const {
    return batch_major ? ((b * d.seq + t) * dirs + dir) * hidden : ((t * dirs + dir) * d.batch + b) * hidden;
  }
  // Y_h's / Y_c's offset of (dir, b, 0).
  int64_t state_off(int dir, int64_t b) const { return batch_major ? (b * dirs + dir) * hidden : (dir * d.batch + b) * hidden; }
};

// The outputs a kernel fills: Y (zeros where a batch entry's sequence has ended), Y_h, Y_c;
// each nullptr when the node does not produce it. Allocated through c.output().
struct Outputs {
  float* y = nullptr;
  float* y_h = nullptr;
  float* y_c = nullptr;
};
Outputs allocate_outputs(KernelContext& c, const Spec& s, const Dims& d);

// The initial state of (dir, b) for input `index` (5: initial_h, 6: initial_c), zeros when
// absent.
void initial_state(const KernelContext& c, size_t index, const Spec& s, const Dims& d, int dir, int64_t b, float* out);

// The reference driver: for every direction and batch entry, walks that entry's sequence
// (backwards for the reverse direction), calling cell(dir, x_t, h, c) which updates h and c
// (hidden floats each; c unused but valid for RNN/GRU) in place; writes Y, Y_h, Y_c.
using Cell = std::function<void(int dir, const float* x, float* h, float* cstate)>;
void run_reference(KernelContext& c, Kind kind, const Cell& cell);

}  // namespace joule::ops::recurrent
