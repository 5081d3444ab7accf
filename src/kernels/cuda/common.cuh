#pragma once
// Private helpers of the CUDA kernels: fp32 loads/stores of every element type, warp reductions,
// launch sizes, and the explicit instantiation list (float, __nv_bfloat16, __half).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/cuda/check.hpp"

namespace autotrain::kernels::gpu {

__device__ __forceinline__ float to_float(float x) {
  return x;
}
__device__ __forceinline__ float to_float(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
__device__ __forceinline__ float to_float(__half x) {
  return __half2float(x);
}

// Round to nearest even, as the CPU's float_to_bf16/float_to_fp16.
template <typename F>
__device__ __forceinline__ F from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}

__device__ __forceinline__ float warp_sum(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

__device__ __forceinline__ float warp_max(float x) {
  for (int offset = 16; offset > 0; offset /= 2)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

// The cuBLAS / cuBLASLt type tag of an element type.
template <typename F>
constexpr cudaDataType_t data_type();
template <>
constexpr cudaDataType_t data_type<float>() {
  return CUDA_R_32F;
}
template <>
constexpr cudaDataType_t data_type<__nv_bfloat16>() {
  return CUDA_R_16BF;
}
template <>
constexpr cudaDataType_t data_type<__half>() {
  return CUDA_R_16F;
}

// An online softmax denominator: the running maximum and Σ exp(x - max) of the values seen.
struct SoftmaxStats {
  float max = -INFINITY;
  float sum = 0.0f;
  __device__ __forceinline__ void add(float x) {
    const float m = fmaxf(max, x);
    sum = sum * expf(max - m) + expf(x - m);
    max = m;
  }
  // Merges the lanes' statistics; every lane ends with the warp's.
  __device__ __forceinline__ void warp_merge() {
    for (int offset = 16; offset > 0; offset /= 2) {
      const float other_max = __shfl_xor_sync(0xffffffffu, max, offset);
      const float other_sum = __shfl_xor_sync(0xffffffffu, sum, offset);
      const float m = fmaxf(max, other_max);
      // A lane with no values holds (-inf, 0); two of them merge to (-inf, 0), not exp(inf - inf).
      if (m != -INFINITY) sum = sum * expf(max - m) + other_sum * expf(other_max - m);
      max = m;
    }
  }
};

inline constexpr int kWarp = 32;
inline constexpr int kBlockThreads = 256;

// Blocks for a grid-stride loop over n elements: enough to fill an H200, never more than needed.
inline unsigned grid_for(std::size_t n, int threads = kBlockThreads) {
  const std::size_t blocks = (n + static_cast<std::size_t>(threads) - 1) / threads;
  return static_cast<unsigned>(blocks < 65536 ? (blocks == 0 ? 1 : blocks) : 65536);
}

inline unsigned ceil_div(std::size_t n, std::size_t d) {
  return static_cast<unsigned>((n + d - 1) / d);
}

}  // namespace autotrain::kernels::gpu

// Instantiates a function template declared in the public header for the three element types.
#define AT_GPU_INSTANTIATE(MACRO) \
  MACRO(float)                    \
  MACRO(__nv_bfloat16)            \
  MACRO(__half)
