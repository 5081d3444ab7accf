// Cast, add and sum of squares over flat device buffers (kernels/cuda/vector.hpp).
#include "autotrain/kernels/cuda/vector.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

template <typename G>
__global__ void cast_kernel(G* out, const float* in, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    out[i] = from_float<G>(in[i]);
  }
}

template <typename G>
__global__ void add_kernel(G* shard, const G* part, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    shard[i] = from_float<G>(to_float(shard[i]) + to_float(part[i]));
  }
}

// Block sum of one value per thread (kBlockThreads threads): warp sums, then the first warp.
__device__ float block_sum(float value) {
  __shared__ float warps[kBlockThreads / kWarp];
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  value = warp_sum(value);
  if (lane == 0) warps[warp] = value;
  __syncthreads();
  value = threadIdx.x < kBlockThreads / kWarp ? warps[threadIdx.x] : 0.0f;
  if (warp == 0) value = warp_sum(value);
  return value;
}

// Pass 1: block b sums the squares of its grid-stride elements into partials[b].
template <typename G>
__global__ void squares_kernel(float* partials, const G* x, std::size_t n) {
  float sum = 0.0f;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const float value = to_float(x[i]);
    sum += value * value;
  }
  sum = block_sum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

// Pass 2: one thread adds the partials in order, in double.
__global__ void total_kernel(double* total, const float* partials, unsigned count) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  double sum = 0.0;
  for (unsigned b = 0; b < count; ++b) sum += static_cast<double>(partials[b]);
  *total += sum;
}

}  // namespace

template <typename G>
void cast_from_float(G* out, const float* in, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  cast_kernel<<<grid_for(n), kBlockThreads, 0, stream>>>(out, in, n);
  AT_CUDA_CHECK_LAUNCH();
}

template <typename G>
void add_into(G* shard, const G* part, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  add_kernel<<<grid_for(n), kBlockThreads, 0, stream>>>(shard, part, n);
  AT_CUDA_CHECK_LAUNCH();
}

template <typename G>
void sum_of_squares(double* total, const G* x, std::size_t n, float* scratch, cudaStream_t stream) {
  if (n == 0) return;
  unsigned blocks = grid_for(n);
  if (blocks > kSumOfSquaresScratch) blocks = static_cast<unsigned>(kSumOfSquaresScratch);
  squares_kernel<<<blocks, kBlockThreads, 0, stream>>>(scratch, x, n);
  AT_CUDA_CHECK_LAUNCH();
  total_kernel<<<1, kWarp, 0, stream>>>(total, scratch, blocks);
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_VECTOR(G)                                                             \
  template void cast_from_float<G>(G*, const float*, std::size_t, cudaStream_t); \
  template void add_into<G>(G*, const G*, std::size_t, cudaStream_t);            \
  template void sum_of_squares<G>(double*, const G*, std::size_t, float*, cudaStream_t);
AT_GPU_INSTANTIATE(AT_VECTOR)

}  // namespace autotrain::kernels::gpu
