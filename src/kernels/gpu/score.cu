// The score head's loss and gradient on the device (kernels/gpu/score.hpp): grid-stride loops
// over the positions.
#include "autotrain/kernels/gpu/score.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

template <typename F>
__global__ void score_forward_kernel(float* losses, const F* scores, const std::int32_t* targets,
                                     std::size_t N) {
  for (std::size_t n = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; n < N;
       n += std::size_t{gridDim.x} * blockDim.x) {
    losses[n] = targets[n] == kIgnoreTarget ? 0.0f : to_float(scores[n]);
  }
}

template <typename F>
__global__ void score_backward_kernel(F* dscores, const std::int32_t* targets, float dloss,
                                      const float* row_scale, std::size_t N) {
  for (std::size_t n = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; n < N;
       n += std::size_t{gridDim.x} * blockDim.x) {
    const float scale = row_scale == nullptr ? 1.0f : row_scale[n];
    dscores[n] = from_float<F>(targets[n] == kIgnoreTarget ? 0.0f : dloss * scale);
  }
}

}  // namespace

template <typename F>
void score_forward(float* losses, const F* scores, const std::int32_t* targets, std::size_t N,
                   cudaStream_t stream) {
  if (N == 0) return;
  score_forward_kernel<<<grid_for(N), kBlockThreads, 0, stream>>>(losses, scores, targets, N);
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void score_backward(F* dscores, const std::int32_t* targets, float dloss, const float* row_scale,
                    std::size_t N, cudaStream_t stream) {
  if (N == 0) return;
  score_backward_kernel<<<grid_for(N), kBlockThreads, 0, stream>>>(dscores, targets, dloss,
                                                                   row_scale, N);
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_SCORE(F)                                                                          \
  template void score_forward<F>(float*, const F*, const std::int32_t*, std::size_t,         \
                                 cudaStream_t);                                              \
  template void score_backward<F>(F*, const std::int32_t*, float, const float*, std::size_t, \
                                  cudaStream_t);
AT_GPU_INSTANTIATE(AT_SCORE)

}  // namespace autotrain::kernels::gpu
