#pragma once
// AT_CUBLAS_CHECK: every cuBLAS and cuBLASLt status (both return cublasStatus_t) is checked where
// the call is made and becomes an autotrain::Error naming the call, file and line. The CUDA
// runtime's own check is AT_CUDA_CHECK (core/gpu/check.hpp). Builds with CUDA only.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cublas_api.h>

#include "autotrain/core/error.hpp"

namespace autotrain::kernels::gpu {

[[noreturn]] inline void throw_cublas_error(cublasStatus_t result, const char* call,
                                            const char* file, int line) {
  throw Error(cat("cuBLAS call failed: ", call, " returned ", static_cast<int>(result), " (",
                  cublasGetStatusName(result), ": ", cublasGetStatusString(result), ") at ", file,
                  ":", line));
}

}  // namespace autotrain::kernels::gpu

#define AT_CUBLAS_CHECK(call)                                                                      \
  do {                                                                                             \
    const cublasStatus_t at_cublas_status_ = (call);                                               \
    if (at_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                                \
      ::autotrain::kernels::gpu::throw_cublas_error(at_cublas_status_, #call, __FILE__, __LINE__); \
  } while (0)

#endif  // AUTOTRAIN_HAVE_CUDA
