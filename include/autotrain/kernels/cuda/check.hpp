#pragma once
// AT_CUDA_CHECK and AT_CUBLAS_CHECK: every CUDA runtime and cuBLAS/cuBLASLt status is checked
// where the call is made and becomes an autotrain::Error naming the call, file and line.
// Only for code built with CUDA (AUTOTRAIN_HAVE_CUDA); header-only so any layer built with the
// CUDA runtime can use it.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include "autotrain/core/error.hpp"

namespace autotrain::kernels::gpu {

[[noreturn]] inline void throw_cuda_error(cudaError_t result, const char* call, const char* file,
                                          int line) {
  throw Error(cat("CUDA call failed: ", call, " returned ", static_cast<int>(result), " (",
                  cudaGetErrorName(result), ": ", cudaGetErrorString(result), ") at ", file, ":",
                  line,
                  result == cudaErrorNoDevice || result == cudaErrorInsufficientDriver
                      ? " (is a GPU visible? check nvidia-smi and CUDA_VISIBLE_DEVICES)"
                      : ""));
}

[[noreturn]] inline void throw_cublas_error(cublasStatus_t result, const char* call,
                                            const char* file, int line) {
  throw Error(cat("cuBLAS call failed: ", call, " returned ", static_cast<int>(result), " (",
                  cublasGetStatusName(result), ": ", cublasGetStatusString(result), ") at ", file,
                  ":", line));
}

}  // namespace autotrain::kernels::gpu

#define AT_CUDA_CHECK(call)                                                                    \
  do {                                                                                         \
    const cudaError_t at_cuda_status_ = (call);                                                \
    if (at_cuda_status_ != cudaSuccess)                                                        \
      ::autotrain::kernels::gpu::throw_cuda_error(at_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

// cuBLASLt returns cublasStatus_t too, so one macro covers both libraries.
#define AT_CUBLAS_CHECK(call)                                                                      \
  do {                                                                                             \
    const cublasStatus_t at_cublas_status_ = (call);                                               \
    if (at_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                                \
      ::autotrain::kernels::gpu::throw_cublas_error(at_cublas_status_, #call, __FILE__, __LINE__); \
  } while (0)

// A kernel launch reports bad launch configurations through cudaGetLastError.
#define AT_CUDA_CHECK_LAUNCH() AT_CUDA_CHECK(cudaGetLastError())

#endif  // AUTOTRAIN_HAVE_CUDA
