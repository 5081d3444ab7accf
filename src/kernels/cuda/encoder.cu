// Encoder (token + position embedding) forward and backward on the device.
// Invariant (as everywhere in kernels/): parameter gradients accumulate (+=), activation
// gradients are overwritten (=), except on the residual stream.
#include "autotrain/kernels/cuda/encoder.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

__device__ __forceinline__ void atomic_add(float* address, float value) {
  atomicAdd(address, value);
}
__device__ __forceinline__ void atomic_add(__nv_bfloat16* address, float value) {
  atomicAdd(address, __float2bfloat16_rn(value));
}
__device__ __forceinline__ void atomic_add(__half* address, float value) {
  atomicAdd(address, __float2half_rn(value));
}

// One thread per element of out [B, T, C].
template <typename F>
__global__ void encoder_forward_kernel(F* out, const std::int32_t* inp, const F* wte, const F* wpe,
                                       int T, int C, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < total;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t bt = i / C;
    const std::size_t c = i % C;
    const std::size_t t = bt % T;
    const std::size_t token = static_cast<std::size_t>(inp[bt]);
    out[i] = from_float<F>(to_float(wte[token * C + c]) + to_float(wpe[t * C + c]));
  }
}

// One thread per element of dwpe [T, C]: sums the batch in order b = 0..B-1 (deterministic).
template <typename F>
__global__ void encoder_dwpe_kernel(F* dwpe, const F* dout, int B, int T, int C) {
  const std::size_t TC = static_cast<std::size_t>(T) * C;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < TC;
       i += std::size_t{gridDim.x} * blockDim.x) {
    float sum = 0.0f;
    for (int b = 0; b < B; ++b) sum += to_float(dout[b * TC + i]);
    dwpe[i] = from_float<F>(to_float(dwpe[i]) + sum);
  }
}

// One thread per element of dout [B, T, C]: a token may repeat, so rows of dwte collide.
template <typename F>
__global__ void encoder_dwte_kernel(F* dwte, const F* dout, const std::int32_t* inp, int C,
                                    std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < total;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t token = static_cast<std::size_t>(inp[i / C]);
    atomic_add(dwte + token * C + i % C, to_float(dout[i]));
  }
}

}  // namespace

template <typename F>
void encoder_forward(F* out, const std::int32_t* inp, const F* wte, const F* wpe, int B, int T,
                     int C, cudaStream_t stream) {
  const std::size_t total = static_cast<std::size_t>(B) * T * C;
  encoder_forward_kernel<<<grid_for(total), kBlockThreads, 0, stream>>>(out, inp, wte, wpe, T, C,
                                                                        total);
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void encoder_backward(F* dwte, F* dwpe, const F* dout, const std::int32_t* inp, int B, int T, int C,
                      cudaStream_t stream) {
  const std::size_t total = static_cast<std::size_t>(B) * T * C;
  encoder_dwpe_kernel<<<grid_for(static_cast<std::size_t>(T) * C), kBlockThreads, 0, stream>>>(
      dwpe, dout, B, T, C);
  AT_CUDA_CHECK_LAUNCH();
  encoder_dwte_kernel<<<grid_for(total), kBlockThreads, 0, stream>>>(dwte, dout, inp, C, total);
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_ENCODER(F)                                                                          \
  template void encoder_forward<F>(F*, const std::int32_t*, const F*, const F*, int, int, int, \
                                   cudaStream_t);                                              \
  template void encoder_backward<F>(F*, F*, const F*, const std::int32_t*, int, int, int,      \
                                    cudaStream_t);
AT_GPU_INSTANTIATE(AT_ENCODER)

}  // namespace autotrain::kernels::gpu
