// The CUDA backend's host face in CUDA builds: devices, memory, copies, timing.
#include <algorithm>
#include <mutex>

#include "joule/core/error.h"
#include "joule/cuda/backend.h"
#include "joule/cuda/context.h"
#include "joule/cuda/gpu_kernel.h"

namespace joule::cuda {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  const std::string m = std::string(what) + ": CUDA error " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  if (e == cudaErrorMemoryAllocation) fail(m);
  fail_internal(m);
}
void check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS) fail_internal(std::string(what) + ": cuBLAS error " + cublasGetStatusString(e));
}
void check(cudnnStatus_t e, const char* what) {
  if (e != CUDNN_STATUS_SUCCESS) fail_internal(std::string(what) + ": cuDNN error " + cudnnGetErrorString(e));
}

Context& context(int device) {
  static std::mutex m;
  static std::vector<Context*> all;
  std::lock_guard<std::mutex> lock(m);
  if (device < 0) fail_internal("cuda::context of the CPU");
  if (all.size() <= static_cast<size_t>(device)) all.resize(static_cast<size_t>(device) + 1, nullptr);
  if (!all[static_cast<size_t>(device)]) {
    auto* c = new Context();  // kept for the process: buffers freed at exit still need its stream
    c->device = device;
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaGetDeviceProperties(&c->prop, device), "cudaGetDeviceProperties");
    check(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    // Freed blocks stay in the stream-ordered pool for the next run instead of going back to
    // the driver at every synchronisation.
    cudaMemPool_t pool;
    check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    uint64_t keep = UINT64_MAX;
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
    check(cublasCreate(&c->blas), "cublasCreate");
    check(cublasSetStream(c->blas, c->stream), "cublasSetStream");
    // A fixed workspace: cuBLAS then allocates nothing per call, and captured graphs replay it.
    void* ws = nullptr;
    constexpr size_t kBlasWorkspace = size_t{32} << 20;
    check(cudaMalloc(&ws, kBlasWorkspace), "cudaMalloc (cuBLAS workspace)");
    check(cublasSetWorkspace(c->blas, ws, kBlasWorkspace), "cublasSetWorkspace");
    check(cudnnCreate(&c->dnn), "cudnnCreate");
    check(cudnnSetStream(c->dnn, c->stream), "cudnnSetStream");
    all[static_cast<size_t>(device)] = c;
  }
  cudaSetDevice(device);
  return *all[static_cast<size_t>(device)];
}

bool built() { return true; }

DeviceList list_devices() {
  DeviceList l;
  l.cuda_built = true;
  int v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) l.runtime_version = std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  if (cudaDriverGetVersion(&v) == cudaSuccess && v > 0)
    l.driver_version = "CUDA " + std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  const size_t dnn = cudnnGetVersion();
  l.cudnn_version = std::to_string(dnn / 10000) + "." + std::to_string(dnn % 10000 / 100) + "." + std::to_string(dnn % 100);
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    int driver = 0;
    cudaDriverGetVersion(&driver);
    l.why = e == cudaErrorInsufficientDriver && driver == 0
                ? "no NVIDIA driver on this machine (libcuda.so.1 not found)"
                : std::string("no usable GPU: ") + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")";
    cudaGetLastError();
    return l;
  }
  for (int i = 0; i < count; ++i) {
    GpuInfo g;
    g.index = i;
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
      g.why = "cudaGetDeviceProperties failed";
      l.gpus.push_back(g);
      continue;
    }
    g.name = p.name;
    g.memory_bytes = p.totalGlobalMem;
    g.cc_major = p.major;
    g.cc_minor = p.minor;
    g.multiprocessors = p.multiProcessorCount;
    char bus[32];
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, i) == cudaSuccess) g.pci_bus = bus;
    char uuid[64];
    const unsigned char* u = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
    std::snprintf(uuid, sizeof uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
                  u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    g.uuid = uuid;
    g.usable = p.major >= 7;  // cuDNN 9 needs Volta or later
    if (!g.usable) g.why = "compute capability " + std::to_string(p.major) + "." + std::to_string(p.minor) + " (cuDNN 9 needs 7.0 or later)";
    l.gpus.push_back(g);
  }
  if (l.gpus.empty()) l.why = "no GPU found";
  cublasHandle_t h = nullptr;
  if (!l.gpus.empty() && cublasCreate(&h) == CUBLAS_STATUS_SUCCESS) {
    int bv = 0;
    cublasGetVersion(h, &bv);
    l.cublas_version = std::to_string(bv / 10000) + "." + std::to_string(bv % 10000 / 100) + "." + std::to_string(bv % 100);
    cublasDestroy(h);
  }
  return l;
}

std::string gpu_model(int device) {
  const Context& c = context(device);
  return std::string(c.prop.name) + " (sm_" + std::to_string(c.prop.major) + std::to_string(c.prop.minor) + ")";
}

Tensor empty(DType dtype, const Shape& shape, int device) {
  Context& c = context(device);
  const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  void* p = nullptr;
  if (bytes) check(cudaMallocAsync(&p, bytes, c.stream), "cudaMallocAsync");
  cudaStream_t s = c.stream;
  std::shared_ptr<std::byte[]> buf(static_cast<std::byte*>(p), [s](std::byte* q) {
    if (q) cudaFreeAsync(q, s);
  });
  return Tensor::wrap_device(dtype, shape, std::move(buf), device);
}

Tensor upload(const Tensor& host, int device) {
  JOULE_CHECK(host.is_tensor() && host.on_host() && host.dtype() != DType::String, "cuda::upload of " + host.describe());
  Tensor d = empty(host.dtype(), host.shape(), device);
  Context& c = context(device);
  if (host.nbytes()) check(cudaMemcpyAsync(d.raw(), host.raw(), host.nbytes(), cudaMemcpyHostToDevice, c.stream), "upload");
  check(cudaStreamSynchronize(c.stream), "upload");
  return d;
}

Tensor download(const Tensor& t) {
  if (t.on_host()) return t;
  Tensor h(t.dtype(), t.shape());
  Context& c = context(t.device());
  if (t.nbytes()) check(cudaMemcpyAsync(h.raw(), t.raw(), t.nbytes(), cudaMemcpyDeviceToHost, c.stream), "download");
  check(cudaStreamSynchronize(c.stream), "download");
  return h;
}

Tensor copy(const Tensor& t) {
  Tensor d = empty(t.dtype(), t.shape(), t.device());
  if (t.nbytes())
    check(cudaMemcpyAsync(d.raw(), t.raw(), t.nbytes(), cudaMemcpyDeviceToDevice, context(t.device()).stream), "copy");
  return d;
}

void synchronize(int device) { check(cudaStreamSynchronize(context(device).stream), "cudaStreamSynchronize"); }

StepTimer::StepTimer(int device) : device_(device) { context(device); }
StepTimer::~StepTimer() {
  for (void* e : start_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
  for (void* e : stop_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
}
void StepTimer::resize(size_t steps) {
  while (start_.size() < steps) {
    cudaEvent_t a, b;
    check(cudaEventCreate(&a), "cudaEventCreate");
    check(cudaEventCreate(&b), "cudaEventCreate");
    start_.push_back(a);
    stop_.push_back(b);
  }
  used_.assign(steps, false);
}
void StepTimer::start(size_t step) {
  check(cudaEventRecord(static_cast<cudaEvent_t>(start_[step]), context(device_).stream), "cudaEventRecord");
}
void StepTimer::stop(size_t step) {
  check(cudaEventRecord(static_cast<cudaEvent_t>(stop_[step]), context(device_).stream), "cudaEventRecord");
  used_[step] = true;
}
std::vector<double> StepTimer::read() {
  synchronize(device_);
  std::vector<double> ms(used_.size(), -1.0);
  for (size_t i = 0; i < used_.size(); ++i) {
    if (!used_[i]) continue;
    float f = 0;
    check(cudaEventElapsedTime(&f, static_cast<cudaEvent_t>(start_[i]), static_cast<cudaEvent_t>(stop_[i])), "cudaEventElapsedTime");
    ms[i] = f;
  }
  return ms;
}

CapturedGraph::~CapturedGraph() {
  if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
}
void CapturedGraph::begin_capture() {
  check(cudaStreamBeginCapture(context(device_).stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
}
bool CapturedGraph::end_capture() {
  cudaGraph_t g = nullptr;
  cudaError_t e = cudaStreamEndCapture(context(device_).stream, &g);
  if (e != cudaSuccess || !g) {
    why = std::string("capture failed: ") + cudaGetErrorString(e);
    cudaGetLastError();
    return false;
  }
  graph_ = g;
  cudaGraphExec_t x = nullptr;
  e = cudaGraphInstantiate(&x, g, 0);
  if (e != cudaSuccess) {
    why = std::string("instantiation failed: ") + cudaGetErrorString(e);
    cudaGetLastError();
    return false;
  }
  exec_ = x;
  return true;
}
void CapturedGraph::launch() {
  check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), context(device_).stream), "cudaGraphLaunch");
}

double time_kernel(const kernels::Kernel& k, const kernels::NodeView& v, const std::vector<const Tensor*>& inputs,
                   const std::vector<bool>& host_input, int device) {
  std::vector<Tensor> dev(inputs.size());
  std::vector<const Tensor*> ptrs(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) continue;
    const bool host = i < host_input.size() && host_input[i];
    dev[i] = host || !inputs[i]->is_tensor() ? *inputs[i] : upload(*inputs[i], device);
    ptrs[i] = &dev[i];
  }
  StepTimer t(device);
  constexpr int kRuns = 10;
  t.resize(kRuns);
  auto once = [&] {
    ops::KernelContext c{v.node, v.opset, ptrs, {}, nullptr};
    c.outputs.resize(v.node.outputs.size());
    k.run(c);
  };
  once();  // warm-up (cuDNN and cuBLAS pick their kernels)
  once();
  // Timed as the session runs it: replayed from a CUDA graph, so that the library's host-side
  // cost per call (which a captured run no longer pays) does not decide. Node by node where the
  // call cannot be captured.
  CapturedGraph g(device);
  bool captured = false;
  if (dynamic_cast<const GpuKernel*>(&k)) {
    g.begin_capture();
    bool ran = true;
    try {
      once();
    } catch (const Error&) {
      ran = false;
    }
    captured = g.end_capture() && ran;
  }
  for (int i = 0; i < kRuns; ++i) {
    t.start(static_cast<size_t>(i));
    if (captured)
      g.launch();
    else
      once();
    t.stop(static_cast<size_t>(i));
  }
  std::vector<double> ms = t.read();
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace joule::cuda
