#pragma once
// A Session compiles a Graph into an immutable plan (run order, op per node, value slots,
// last use of every value) and runs it. Intermediates are freed after their last use.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "joule/core/thread_pool.h"
#include "joule/ir/graph.h"
#include "joule/kernels/select.h"
#include "joule/runtime/memory_plan.h"

namespace joule::ops {
struct OpDef;
}
namespace joule::cuda {
class CapturedGraph;
}

namespace joule::runtime {

// Callbacks around every node, the counterpart of PyTorch forward hooks. Profiling and
// calibration are built on them. Tensors passed are valid only during the call.
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void before_node(size_t /*step*/, const ir::Node& /*node*/,
                           const std::vector<const Tensor*>& /*inputs*/) {}
  virtual void after_node(size_t /*step*/, const ir::Node& /*node*/,
                          const std::vector<const Tensor*>& /*inputs*/,
                          const std::vector<Tensor>& /*outputs*/) {}
  // False when after_node never reads its inputs: a node computed in place over an input then
  // needs no copy of it kept for the observer.
  virtual bool reads_inputs_after() const { return true; }
  // A node of a control-flow body (If/Loop/Scan/SequenceMap, at any depth) ran inside `step`:
  // `owner` holds the body as its graph attribute `attribute`; `ms` is the node's wall time.
  virtual void body_node(size_t /*step*/, const ir::Node& /*owner*/, const std::string& /*attribute*/, const ir::Node& /*node*/,
                         const std::string& /*algorithm*/, double /*ms*/) {}
};

class Bodies;

struct SessionOptions {
  int threads = 0;                          // 0: all cores available to the process
  std::map<std::string, Shape> input_shapes;  // override graph input shapes
  kernels::AlgoSpec algo;                   // algorithm per node (default: guess)
  // Weights held once: a constant that every consumer's kernel has packed into its own layout
  // is dropped from the session (and its graph) as soon as the last of them is prepared. Off
  // where something replays nodes on their inputs (the profiler's energy replay, hooks).
  bool release_packed_constants = false;
  // -1: every node on the CPU. N: nodes a GPU kernel supports run on CUDA GPU N, the rest on the
  // CPU, with explicit copy nodes between them (runtime/placement.h).
  int device = -1;
  // GPU arithmetic: "fp32" (FMA only, no tensor cores), "tf32" (Conv/MatMul/Gemm on tensor
  // cores with TF32 inputs, as PyTorch's default for cuDNN convolutions), "fp16" or "bf16"
  // (activations stored in half precision: runtime::lower_gpu_floats).
  std::string gpu_math = "fp32";
  // With fp16/bf16: GPU nodes kept in float32 (by name; the precision ladder's fallbacks, e.g.
  // the layers joule automp keeps), with casts where their values meet half ones.
  std::vector<std::string> gpu_fp32{};
  // Runs of consecutive GPU nodes are captured into a CUDA graph at the second run and replayed
  // from then on (one launch instead of one per node), except while observers are attached.
  // JOULE_CUDA_GRAPHS=0 in the environment turns it off (A/B timings).
  bool cuda_graphs = true;
  // A plan only, for saying what a session would run (joule predict): passes, the algorithm of
  // every node (by estimate; an `auto` policy still measures) and the memory plan, but no
  // kernel prepared (no weights packed) and no arena. run() refuses it. (The algorithm a
  // library would refuse at prepare time -- kernels/select.cpp try_prepare -- is not asked.)
  bool plan_only = false;
};

using TensorMap = std::map<std::string, Tensor>;

class Session {
 public:
  Session(ir::Graph graph, SessionOptions options = {});
  ~Session();

  // Runs the plan. Inputs by graph input name; throws BadInput for a missing/extra input
  // or a dtype/shape that does not match the graph.
  TensorMap run(const TensorMap& inputs);

  void add_observer(Observer* o) { observers_.push_back(o); }
  void clear_observers() { observers_.clear(); }

  const ir::Graph& graph() const { return graph_; }
  const std::vector<std::string>& input_names() const { return graph_.inputs; }
  const std::vector<std::string>& output_names() const { return graph_.outputs; }
  // Nodes in execution order.
  size_t num_steps() const { return steps_.size(); }
  const ir::Node& step_node(size_t i) const { return *graph_.nodes[steps_[i].node]; }
  int threads() const { return pool_->threads(); }
  int device() const { return device_; }  // -1: CPU only
  // GPU time of every step of the last run with observers (CUDA events; negative for CPU
  // steps); empty for a CPU session.
  const std::vector<double>& device_step_ms() const { return device_ms_; }
  // GPU nodes and the copies placement made (zero for a CPU session).
  int gpu_nodes() const { return gpu_nodes_; }
  int copy_nodes() const { return copy_nodes_; }
  // The runs of steps replayed as CUDA graphs: "steps 1-55: replayed as a CUDA graph", ...
  std::vector<std::string> cuda_graph_report() const;
  // Runs step i's chosen kernel once more on `inputs` (its own, as an observer saw them), on the
  // step's device, and waits for it: energy replay of one layer.
  void replay_step(size_t i, const std::vector<const Tensor*>& inputs);
  // Step i's control-flow bodies as planned sessions (null when its node has none).
  const Bodies* step_bodies(size_t i) const { return steps_[i].bodies.get(); }
  ThreadPool& pool() { return *pool_; }

  // Largest total size of live intermediate and output tensors during the last run
  // (weights excluded; buffers shared by views counted once).
  size_t peak_bytes() const { return peak_bytes_; }
  // The static activation plan: arena size vs every buffer separate. Kernels that accept a
  // preallocated output (the fast conv/gemm/matmul kernels) write into the arena.
  const MemoryPlan& memory_plan() const { return plan_; }
  // The same for values in GPU memory (an arena of its own there).
  const MemoryPlan& device_memory_plan() const { return device_plan_; }
  // Bytes of the constants the session still holds (packed copies inside kernels not counted).
  size_t weight_bytes() const;
  // Constants released after their kernels packed them (release_packed_constants).
  size_t released_constants() const { return released_; }

 private:
  struct Step {
    size_t node;
    const ops::OpDef* def;
    std::shared_ptr<const kernels::Kernel> kernel;  // null: the op's reference kernel
    std::vector<int> in_slots;   // -1: absent optional
    std::vector<int> out_slots;  // -1: output not used
    std::vector<int> free_after;  // slots whose last use is this step
    int device = -1;              // where it runs
    std::vector<bool> device_constant;  // per input: read the constant's GPU copy
    std::shared_ptr<const Bodies> bodies;  // If/Loop/Scan: its bodies' sessions
    int overwrites_input = -1;  // the input whose buffer holds output 0 (in place), or -1
  };
  void check_input(const std::string& name, const Tensor& t) const;
  void choose_kernels(const kernels::AlgoSpec& spec, bool release_packed);
  void plan_activations(const std::vector<int>& last);
  void upload_constants(Step& st);
  int slot_device(int slot) const;
  void find_segments(bool enabled);
  bool in_arena(const Tensor& t) const;

  ir::Graph graph_;
  std::unique_ptr<ThreadPool> pool_;
  std::vector<Step> steps_;
  std::map<std::string, int> slot_of_;
  std::vector<Tensor> constant_slots_;  // initializers, by slot (undefined elsewhere)
  std::vector<int> input_slots_, output_slots_;
  std::vector<Observer*> observers_;
  MemoryPlan plan_;                      // per slot
  std::vector<ir::TensorType> slot_type_;  // static type of planned slots
  Tensor arena_;
  int device_ = -1;
  bool plan_only_ = false;
  int gpu_nodes_ = 0, copy_nodes_ = 0;
  std::vector<int> slot_device_;           // where each slot's value lives (-1 host)
  std::vector<Tensor> device_constants_;  // GPU copies of constants GPU nodes read, by slot
  MemoryPlan device_plan_;
  Tensor device_arena_;
  std::vector<double> device_ms_;
  struct Segment {  // steps [begin, end) on the GPU, replayed as one graph once captured
    size_t begin = 0, end = 0;
    int eager_runs = 0;
    bool failed = false;
    std::string why;
    std::shared_ptr<cuda::CapturedGraph> graph;
    std::vector<std::vector<Tensor>> outputs;  // each step's outputs on replay
  };
  std::vector<Segment> segments_;
  size_t peak_bytes_ = 0;
  size_t released_ = 0;
};

}  // namespace joule::runtime
