// Residual connection forward and backward on the device, fp32 arithmetic.
// Invariant: both input gradients accumulate (+=): the residual stream's gradient sums the skip
// path and the block's path.
#include "autotrain/kernels/cuda/residual.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

template <typename F>
__global__ void residual_forward_kernel(F* out, const F* inp1, const F* inp2, std::size_t N) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < N;
       i += std::size_t{gridDim.x} * blockDim.x) {
    out[i] = from_float<F>(to_float(inp1[i]) + to_float(inp2[i]));
  }
}

template <typename F>
__global__ void residual_backward_kernel(F* dinp1, F* dinp2, const F* dout, std::size_t N) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < N;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const float d = to_float(dout[i]);
    dinp1[i] = from_float<F>(to_float(dinp1[i]) + d);
    dinp2[i] = from_float<F>(to_float(dinp2[i]) + d);
  }
}

}  // namespace

template <typename F>
void residual_forward(F* out, const F* inp1, const F* inp2, std::size_t N, cudaStream_t stream) {
  residual_forward_kernel<<<grid_for(N), kBlockThreads, 0, stream>>>(out, inp1, inp2, N);
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void residual_backward(F* dinp1, F* dinp2, const F* dout, std::size_t N, cudaStream_t stream) {
  residual_backward_kernel<<<grid_for(N), kBlockThreads, 0, stream>>>(dinp1, dinp2, dout, N);
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_RESIDUAL(F)                                                                  \
  template void residual_forward<F>(F*, const F*, const F*, std::size_t, cudaStream_t); \
  template void residual_backward<F>(F*, F*, const F*, std::size_t, cudaStream_t);
AT_GPU_INSTANTIATE(AT_RESIDUAL)

}  // namespace autotrain::kernels::gpu
