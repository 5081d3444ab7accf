// GELU (tanh approximation) forward and backward on the device, fp32 arithmetic.
// Invariant: the input gradient is overwritten (=), never accumulated.
#include "autotrain/kernels/cuda/gelu.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

template <typename F>
__global__ void gelu_forward_kernel(F* out, const F* inp, std::size_t N) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < N;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const float x = to_float(inp[i]);
    out[i] = from_float<F>(0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kCubic * x * x * x))));
  }
}

template <typename F>
__global__ void gelu_backward_kernel(F* dinp, const F* inp, const F* dout, std::size_t N) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < N;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const float x = to_float(inp[i]);
    const float th = tanhf(kSqrt2OverPi * (x + kCubic * x * x * x));
    const float sech2 = 1.0f - th * th;
    const float grad =
        0.5f * (1.0f + th) + 0.5f * x * sech2 * kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
    dinp[i] = from_float<F>(grad * to_float(dout[i]));
  }
}

}  // namespace

template <typename F>
void gelu_forward(F* out, const F* inp, std::size_t N, cudaStream_t stream) {
  gelu_forward_kernel<<<grid_for(N), kBlockThreads, 0, stream>>>(out, inp, N);
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void gelu_backward(F* dinp, const F* inp, const F* dout, std::size_t N, cudaStream_t stream) {
  gelu_backward_kernel<<<grid_for(N), kBlockThreads, 0, stream>>>(dinp, inp, dout, N);
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_GELU(F)                                                        \
  template void gelu_forward<F>(F*, const F*, std::size_t, cudaStream_t); \
  template void gelu_backward<F>(F*, const F*, const F*, std::size_t, cudaStream_t);
AT_GPU_INSTANTIATE(AT_GELU)

}  // namespace autotrain::kernels::gpu
