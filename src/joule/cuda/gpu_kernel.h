#pragma once
// What the GPU algorithms share (CUDA builds only): a kernel prepared for the static shapes of
// its node on one GPU, with its outputs in the session's GPU arena when planned there.
#include <string>
#include <vector>

#include "joule/cuda/backend.h"
#include "joule/cuda/context.h"
#include "joule/cuda/kernels.h"

namespace joule::cuda {

class GpuKernel : public kernels::Kernel {
 public:
  explicit GpuKernel(const kernels::NodeView& v);
  // Output j at its planned shape: the session's planned GPU buffer when it gave one, else new.
  Tensor& out(ops::KernelContext& k, size_t j) const;
  // Input i, which must be in this GPU's memory at its planned shape.
  const Tensor& in(const ops::KernelContext& k, size_t i) const;
  cudaStream_t stream() const { return ctx_->stream; }

 protected:
  int device_;
  Context* ctx_;
  std::vector<Shape> out_shapes_;
  std::vector<DType> out_dtypes_;
  std::vector<Shape> in_shapes_;
  bool tf32_ = false;  // the node's gpu_math allows TF32 tensor cores
  k::Elt elt_ = k::Elt::F32;  // the storage type of its float activations (its first float output's)
};

// float32, float16 or bfloat16: the types GPU kernels compute on (k::Elt).
inline bool gpu_float(DType t) { return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16; }
// The storage type of a float dtype (F32 for any other).
k::Elt elt_of(DType t);
// The GPU arithmetic a node asked for (meta "gpu_math": fp32, tf32, fp16, bf16; fp32 when unset).
std::string gpu_math_of(const ir::Node& n);
// "" when inputs `inputs` (those present) and every output of `v` are tensors of one float
// dtype (float32, float16 or bfloat16): else why not.
std::string same_float(const kernels::NodeView& v, std::initializer_list<size_t> inputs);

// The activation a FusedConv / FusedMatMul applies in its epilogue (None for other nodes), with
// its parameters; false for one the epilogue kernel lacks.
bool fused_activation(const ir::Node& n, k::Act* act, float* a, float* b);

// "" when every non-host input and every output of `v` is a tensor of static shape.
std::string static_shapes(const kernels::NodeView& v, const std::vector<bool>& host_input);
inline int64_t numel_of(const Shape& s) { return shape_numel(s); }

// The conv algorithms (conv_cuda.cpp), one per cuDNN forward algorithm.
const std::vector<const kernels::Algorithm*>& conv_algorithms();

}  // namespace joule::cuda
