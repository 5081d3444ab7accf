#pragma once
// AT_CUDA_CHECK: every CUDA runtime status is checked where the call is made and becomes an
// autotrain::Error naming the call, file and line (cuBLAS: kernels/gpu/cublas_check.hpp).
// Only for code built with CUDA (AUTOTRAIN_HAVE_CUDA); header-only, in core so that every layer
// built with the CUDA runtime (comm's NCCL communicator, kernels, model, zero, train) uses it.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "autotrain/core/error.hpp"

namespace autotrain::gpu {

[[noreturn]] inline void throw_cuda_error(cudaError_t result, const char* call, const char* file,
                                          int line) {
  throw Error(cat("CUDA call failed: ", call, " returned ", static_cast<int>(result), " (",
                  cudaGetErrorName(result), ": ", cudaGetErrorString(result), ") at ", file, ":",
                  line,
                  result == cudaErrorNoDevice || result == cudaErrorInsufficientDriver
                      ? " (is a GPU visible? check nvidia-smi and CUDA_VISIBLE_DEVICES)"
                      : ""));
}

}  // namespace autotrain::gpu

#define AT_CUDA_CHECK(call)                                                           \
  do {                                                                                \
    const cudaError_t at_cuda_status_ = (call);                                       \
    if (at_cuda_status_ != cudaSuccess)                                               \
      ::autotrain::gpu::throw_cuda_error(at_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

// A kernel launch reports bad launch configurations through cudaGetLastError.
#define AT_CUDA_CHECK_LAUNCH() AT_CUDA_CHECK(cudaGetLastError())

#endif  // AUTOTRAIN_HAVE_CUDA
