// Cast, add and sum of squares over flat device buffers (kernels/gpu/vector.hpp).
// Each thread moves W = kPack<G> elements per access (128-bit loads/stores) over the whole packs;
// a scalar launch (W = 1) takes the tail and any buffer that is not 16-byte aligned.
#include "autotrain/kernels/gpu/vector.hpp"
#include "elementwise.cuh"

namespace autotrain::kernels::gpu {
namespace {

// x itself: a cast, once rounded to the output's type.
struct Copy {
  __device__ float operator()(float x) const { return x; }
};

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

// Pass 1: block b sums the squares of its grid-stride packs into partials[b]; the scalar tail
// (n - packs·W elements, fewer than W) is added by block 0's first threads.
template <int W, typename G>
__global__ void squares_kernel(float* partials, const G* x, std::size_t n) {
  const std::size_t packs = n / W;
  float sum = 0.0f;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < packs;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const auto p = load_packed<W>(x + i * W);
    for (int k = 0; k < W; ++k) sum += p.get(k) * p.get(k);
  }
  const std::size_t tail = packs * W + threadIdx.x;
  if (blockIdx.x == 0 && tail < n) {
    const float value = to_float(x[tail]);
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

// The casts: out = x, rounded to the output's type.
template <typename G>
void cast_from_float(G* out, const float* in, std::size_t n, cudaStream_t stream) {
  launch_elementwise(Copy{}, n, stream, out, in);
}

template <typename G>
void cast_to_float(float* out, const G* in, std::size_t n, cudaStream_t stream) {
  launch_elementwise(Copy{}, n, stream, out, in);
}

// The sums: sum += part, in G's precision or in fp32.
template <typename G>
void add_into(G* shard, const G* part, std::size_t n, cudaStream_t stream) {
  launch_elementwise(Add{}, n, stream, shard, shard, part);
}

template <typename G>
void accumulate_into(float* into, const G* part, std::size_t n, cudaStream_t stream) {
  launch_elementwise(Add{}, n, stream, into, into, part);
}

template <typename G>
void sum_of_squares(double* total, const G* x, std::size_t n, float* scratch, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int W = kPack<G>;
  const bool packed = all_aligned_16(x);
  unsigned blocks = grid_for(packed ? n / W : n);
  if (blocks > kSumOfSquaresScratch) blocks = static_cast<unsigned>(kSumOfSquaresScratch);
  if (packed) {
    squares_kernel<W><<<blocks, kBlockThreads, 0, stream>>>(scratch, x, n);
  } else {
    squares_kernel<1><<<blocks, kBlockThreads, 0, stream>>>(scratch, x, n);
  }
  AT_CUDA_CHECK_LAUNCH();
  total_kernel<<<1, kWarp, 0, stream>>>(total, scratch, blocks);
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_VECTOR(G)                                                             \
  template void cast_from_float<G>(G*, const float*, std::size_t, cudaStream_t); \
  template void add_into<G>(G*, const G*, std::size_t, cudaStream_t);            \
  template void cast_to_float<G>(float*, const G*, std::size_t, cudaStream_t);   \
  template void accumulate_into<G>(float*, const G*, std::size_t, cudaStream_t); \
  template void sum_of_squares<G>(double*, const G*, std::size_t, float*, cudaStream_t);
AT_GPU_INSTANTIATE(AT_VECTOR)

}  // namespace autotrain::kernels::gpu
