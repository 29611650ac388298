#pragma once
// The CUDA backend's host-side face, compiled with or without CUDA: which GPUs there are, the
// device a command asked for, which nodes a GPU kernel runs, and the copies between host and GPU
// memory that the session's plan makes explicit (MemcpyToDevice / MemcpyToHost nodes). Without
// the CUDA toolkit at build time (cuda::built() false) every GPU request is refused with one line.
#include <string>
#include <vector>

#include "joule/core/tensor.h"
#include "joule/kernels/algorithm.h"

namespace joule::cuda {

// Was joule built with the CUDA backend (toolkit, cuBLAS and cuDNN found at build time)?
bool built();

struct GpuInfo {
  int index = 0;
  std::string name, uuid, pci_bus;
  size_t memory_bytes = 0;
  int cc_major = 0, cc_minor = 0, multiprocessors = 0;
  bool usable = false;
  std::string why;  // why it is unusable ("" when usable)
};
struct DeviceList {
  bool cuda_built = false;
  std::string runtime_version, driver_version, cudnn_version, cublas_version;
  std::vector<GpuInfo> gpus;
  std::string why;  // why no GPU can be used ("" when one can)
};
DeviceList list_devices();

// "cpu" -> -1, "cuda" -> 0, "cuda:N" -> N. BadInput for anything else, and for a GPU request
// when CUDA is not built in or no such GPU is usable (with the reason).
int parse_device(const std::string& spec);
// The same without opening the GPU: -1 for cpu, N for cuda[:N], BadInput when malformed.
int parse_device_syntax(const std::string& spec);
std::string device_name(int device);  // "cpu", "cuda:0"

// Whether a GPU kernel runs node `v` ("" yes; else the reason, e.g. "no CUDA kernel for Resize"),
// and which of its inputs it reads in host memory (shapes, axes, bounds, BatchNormalization's
// statistics: never copied or uploaded).
struct Support {
  std::string reason;
  std::vector<bool> host_input;  // by input index
};
Support support(const kernels::NodeView& v);
// Only the second half of support(): the inputs of `n` a GPU kernel would read in host memory.
std::vector<bool> host_inputs(const ir::Node& n);
// The GPU algorithms (registered with the CPU ones; Algorithm::device == "cuda").
const std::vector<const kernels::Algorithm*>& algorithms();
// The op class the GPU algorithms use for node `n` (the CPU op class where there is one).
std::string op_class(const ir::Node& n);

// Memory. All of these throw BadInput/Internal with CUDA's message on failure.
Tensor empty(DType dtype, const Shape& shape, int device);  // uninitialised GPU buffer
Tensor upload(const Tensor& host, int device);              // synchronous copy of a host tensor
Tensor download(const Tensor& t);                           // a host copy (synchronous)
Tensor copy(const Tensor& t);                               // a GPU copy (on the stream)
void synchronize(int device);
std::string gpu_model(int device);  // "NVIDIA H200 (sm_90)": for tuning-cache keys

// Per-step GPU time of one run: events recorded around each step on the device's stream.
class StepTimer {
 public:
  explicit StepTimer(int device);
  ~StepTimer();
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;
  void resize(size_t steps);
  void start(size_t step);
  void stop(size_t step);
  // Milliseconds of each step recorded since resize (negative where none was); synchronises.
  std::vector<double> read();

 private:
  int device_;
  std::vector<void*> start_, stop_;
  std::vector<bool> used_;
};

// A CUDA graph captured from the device's stream and replayed (whole runs of GPU nodes without
// the host in between). end_capture() is false when the captured work cannot be replayed (a
// library call that synchronises or allocates during capture): `why` says what.
class CapturedGraph {
 public:
  explicit CapturedGraph(int device) : device_(device) {}
  ~CapturedGraph();
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  void begin_capture();
  bool end_capture();
  void launch();
  bool ready() const { return exec_ != nullptr; }
  std::string why;

 private:
  int device_;
  void* graph_ = nullptr;
  void* exec_ = nullptr;
};

// Times a prepared GPU kernel on `inputs` (host tensors; uploaded) on its device: the median of
// repeated launches measured with events (for --algo auto).
double time_kernel(const kernels::Kernel& k, const kernels::NodeView& v, const std::vector<const Tensor*>& inputs,
                   const std::vector<bool>& host_input, int device);

}  // namespace joule::cuda
