#pragma once
// Placement: which device runs every node, and the copies between host and GPU memory made
// explicit nodes of the graph (ONNX Runtime's MemcpyFromHost/MemcpyToHost), so that plans,
// profiles and the memory planner see and count them.
//
// Each node goes to the GPU when a GPU kernel supports it (`support`), else stays on the CPU
// with the reason in meta["device_reason"]; meta["device"] is "cuda:N" or "cpu". A value made on
// one side and read on the other gets one copy node (joule.MemcpyToDevice / MemcpyToHost) before
// its first reader there; graph inputs arrive in host memory and graph outputs leave in it.
// Constants are not copied per run: the session uploads those GPU nodes read once. Inputs a GPU
// kernel reads on the host (shapes, axes) are never copied; neither are inputs of Shape/Size,
// which read only the shape.
#include <functional>
#include <string>
#include <vector>

#include "joule/ir/graph.h"
#include "joule/kernels/algorithm.h"

namespace joule::runtime {

struct DeviceSupport {
  std::string reason;            // "" when a GPU kernel runs the node
  std::vector<bool> host_input;  // inputs the GPU kernel reads in host memory
};
using SupportFn = std::function<DeviceSupport(const kernels::NodeView&)>;

struct PlacementReport {
  int gpu_nodes = 0, cpu_nodes = 0, copies = 0;
  std::vector<std::pair<std::string, std::string>> cpu_fallbacks;  // node -> why
};

// Places the nodes of `g` (shapes inferred) for GPU `device` and inserts the copies. The graph
// stays topologically sorted.
PlacementReport place_on_device(ir::Graph& g, int device, const SupportFn& support);

// Half-precision storage on the GPU (--gpu-math fp16 | bf16), after place_on_device: every
// float32 value a GPU node makes (the copies to the device included) becomes `to`, so that GPU
// kernels read and write half the bytes and cuDNN/cuBLAS run on tensor cores (accumulating in
// float32); the copies back to the host keep float32 and convert on the GPU. The float32
// constants GPU nodes read on the GPU are converted once into twins (`NAME@float16`) that only
// those nodes read; CPU nodes and the inputs GPU kernels read on the host (cuda::host_inputs:
// shapes, bounds, BatchNormalization's statistics folded at prepare) keep float32. The GPU nodes named in `keep` stay
// wholly float32 (the precision ladder's fallbacks), and a Cast node on the GPU converts each
// value where a float32 reader meets a half writer or the other way round. Returns how many
// values changed type; names in `keep` that are no node of `g` are refused (BadInput, all listed).
int lower_gpu_floats(ir::Graph& g, DType to, const std::vector<std::string>& keep = {});

// The device a placed node runs on: -1 CPU, N cuda:N (unplaced nodes: -1).
int node_device(const ir::Node& n);
// Is `n` one of the copy nodes placement inserts?
bool is_memcpy(const ir::Node& n);

}  // namespace joule::runtime
