#pragma once
// The CUDA backend's per-GPU state (CUDA builds only): one stream that every GPU node of every
// session on that GPU runs on, in order, with its cuBLAS (and its fixed workspace) and cuDNN
// handles bound to it. Made on first use and kept for the process.
#include <string>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "joule/core/tensor.h"

namespace joule::cuda {

// Throw Internal (BadInput for out-of-memory) with the library's message and `what`.
void check(cudaError_t e, const char* what);
void check(cublasStatus_t e, const char* what);
void check(cudnnStatus_t e, const char* what);

struct Context {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cudnnHandle_t dnn = nullptr;
  cudaDeviceProp prop{};
};
Context& context(int device);

template <class T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(const_cast<void*>(t.raw()));
}

}  // namespace joule::cuda
