// The parts of the CUDA backend's host face that need no CUDA: device names, the inputs GPU
// kernels read on the host (placement and the lowering to half types, tested everywhere), and the refusals
// every GPU request gets when joule was built without the toolkit (backend_cuda.cpp otherwise).
#include "joule/cuda/backend.h"

#include <cctype>

#include "joule/core/error.h"

namespace joule::cuda {

int parse_device_syntax(const std::string& spec) {
  if (spec == "cpu") return -1;
  if (spec == "cuda" || spec == "gpu") return 0;
  if (spec.rfind("cuda:", 0) == 0 && spec.size() > 5 && spec.size() < 9) {
    int n = 0;
    for (size_t i = 5; i < spec.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(spec[i]))) n = -1;
      if (n >= 0) n = n * 10 + (spec[i] - '0');
    }
    if (n >= 0) return n;
  }
  fail("--device " + spec + ": expected cpu, cuda or cuda:N");
}

std::vector<bool> host_inputs(const ir::Node& n) {
  std::vector<bool> h(n.inputs.size(), false);
  auto set = [&](std::initializer_list<size_t> idx) {
    for (size_t i : idx)
      if (i < h.size()) h[i] = true;
  };
  const std::string& t = n.op_type;
  if (n.domain == "joule" && t == "MemcpyToDevice") set({0});
  if (!n.domain.empty()) return h;
  if (t == "Reshape" || t == "Squeeze" || t == "Unsqueeze" || t == "Expand" || t == "Split" || t == "Tile") set({1});
  if (t == "Slice") set({1, 2, 3, 4});
  if (t == "Clip" || t == "Dropout") set({1, 2});
  if (t.rfind("Reduce", 0) == 0) set({1});
  if (t == "BatchNormalization") set({1, 2, 3, 4});  // folded into a scale and shift at prepare
  return h;
}

std::string device_name(int device) { return device < 0 ? "cpu" : "cuda:" + std::to_string(device); }

int parse_device(const std::string& spec) {
  const int d = parse_device_syntax(spec);
  if (d < 0) return d;
  const DeviceList l = list_devices();
  if (!l.cuda_built) fail("--device " + spec + ": " + l.why);
  if (static_cast<size_t>(d) >= l.gpus.size())
    fail("--device " + spec + ": " + (l.gpus.empty() ? l.why : "there are " + std::to_string(l.gpus.size()) + " GPUs (cuda:0 .. cuda:" + std::to_string(l.gpus.size() - 1) + ")"));
  if (!l.gpus[static_cast<size_t>(d)].usable) fail("--device " + spec + ": " + l.gpus[static_cast<size_t>(d)].why);
  return d;
}

#ifndef JOULE_HAVE_CUDA
namespace {
[[noreturn]] void not_built() { fail("this joule was built without CUDA (no CUDA toolkit with cuBLAS and cuDNN at build time)"); }
}  // namespace

bool built() { return false; }
DeviceList list_devices() {
  DeviceList l;
  l.why = "joule was built without CUDA (no CUDA toolkit with cuBLAS and cuDNN at build time)";
  return l;
}
Support support(const kernels::NodeView&) { return {"joule was built without CUDA", {}}; }
const std::vector<const kernels::Algorithm*>& algorithms() {
  static const std::vector<const kernels::Algorithm*> none;
  return none;
}
std::string op_class(const ir::Node&) { return ""; }
Tensor empty(DType, const Shape&, int) { not_built(); }
Tensor upload(const Tensor&, int) { not_built(); }
Tensor download(const Tensor&) { not_built(); }
Tensor copy(const Tensor&) { not_built(); }
void synchronize(int) { not_built(); }
std::string gpu_model(int) { not_built(); }
StepTimer::StepTimer(int device) : device_(device) { not_built(); }
StepTimer::~StepTimer() = default;
void StepTimer::resize(size_t) {}
void StepTimer::start(size_t) {}
void StepTimer::stop(size_t) {}
std::vector<double> StepTimer::read() { return {}; }
CapturedGraph::~CapturedGraph() = default;
void CapturedGraph::begin_capture() { not_built(); }
bool CapturedGraph::end_capture() { return false; }
void CapturedGraph::launch() { not_built(); }
double time_kernel(const kernels::Kernel&, const kernels::NodeView&, const std::vector<const Tensor*>&, const std::vector<bool>&, int) {
  not_built();
}
#endif

}  // namespace joule::cuda
