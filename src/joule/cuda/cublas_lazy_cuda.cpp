// cuBLAS loaded on first use. Linking it would load libcublasLt at every start of joule (and of
// the Python module): about 210 MB resident and 0.4 s before main(), GPU or not. These are the
// cuBLAS entry points the backend calls, each resolved with dlsym on its first call; their
// signatures are the header's (a mismatch does not compile).
#include <dlfcn.h>

#include <cublas_v2.h>

#include <string>

#include "joule/core/error.h"

namespace {

void* cublas_library() {
  static void* h = [] {
    void* p = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!p) p = dlopen(JOULE_CUBLAS_PATH, RTLD_NOW | RTLD_LOCAL);  // the toolkit's, found at build time
    return p;
  }();
  if (!h) joule::fail(std::string("cuBLAS not found (libcublas.so.13, ") + JOULE_CUBLAS_PATH + "): install the CUDA toolkit's cuBLAS");
  return h;
}

template <class F>
F resolve(const char* name) {
  void* s = dlsym(cublas_library(), name);
  if (!s) joule::fail_internal(std::string("cuBLAS lacks ") + name);
  return reinterpret_cast<F>(s);
}

}  // namespace

extern "C" {

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  static const auto f = resolve<decltype(&cublasCreate_v2)>("cublasCreate_v2");
  return f(handle);
}
cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  static const auto f = resolve<decltype(&cublasDestroy_v2)>("cublasDestroy_v2");
  return f(handle);
}
cublasStatus_t CUBLASWINAPI cublasGetVersion_v2(cublasHandle_t handle, int* version) {
  static const auto f = resolve<decltype(&cublasGetVersion_v2)>("cublasGetVersion_v2");
  return f(handle, version);
}
cublasStatus_t CUBLASWINAPI cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  static const auto f = resolve<decltype(&cublasSetWorkspace_v2)>("cublasSetWorkspace_v2");
  return f(handle, workspace, bytes);
}
cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  static const auto f = resolve<decltype(&cublasSetStream_v2)>("cublasSetStream_v2");
  return f(handle, stream);
}
cublasStatus_t CUBLASWINAPI cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  static const auto f = resolve<decltype(&cublasSetMathMode)>("cublasSetMathMode");
  return f(handle, mode);
}
const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  static const auto f = resolve<decltype(&cublasGetStatusString)>("cublasGetStatusString");
  return f(status);
}
cublasStatus_t CUBLASWINAPI cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                                           int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                                           const float* beta, float* C, int ldc) {
  static const auto f = resolve<decltype(&cublasSgemm_v2)>("cublasSgemm_v2");
  return f(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
cublasStatus_t CUBLASWINAPI cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                                      int m, int n, int k, const float* alpha, const float* A, int lda,
                                                      long long int strideA, const float* B, int ldb, long long int strideB,
                                                      const float* beta, float* C, int ldc, long long int strideC,
                                                      int batchCount) {
  static const auto f = resolve<decltype(&cublasSgemmStridedBatched)>("cublasSgemmStridedBatched");
  return f(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batchCount);
}

cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                                         const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B,
                                         cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc,
                                         cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  static const auto f = resolve<cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                                   const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                                   cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t)>("cublasGemmEx");
  return f(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType, algo);
}
cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                                       int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                                       int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb,
                                                       long long int strideB, const void* beta, void* C, cudaDataType Ctype, int ldc,
                                                       long long int strideC, int batchCount, cublasComputeType_t computeType,
                                                       cublasGemmAlgo_t algo) {
  static const auto f =
      resolve<cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
                                 cudaDataType, int, long long int, const void*, cudaDataType, int, long long int, const void*, void*,
                                 cudaDataType, int, long long int, int, cublasComputeType_t, cublasGemmAlgo_t)>(
          "cublasGemmStridedBatchedEx");
  return f(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype, ldc, strideC,
           batchCount, computeType, algo);
}

}  // extern "C"
