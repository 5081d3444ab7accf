// Residual connection forward and backward on the device, fp32 arithmetic.
// Invariant: both input gradients accumulate (+=): the residual stream's gradient sums the skip
// path and the block's path.
// Each thread moves W elements per access (kPack<F>: 128-bit loads/stores) over the whole packs;
// a scalar launch (W = 1) takes the tail and any buffer that is not 16-byte aligned.
#include "autotrain/kernels/gpu/residual.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

// packs = elements / W.
template <int W, typename F>
__global__ void residual_forward_kernel(F* out, const F* inp1, const F* inp2, std::size_t packs) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < packs;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const auto a = load_packed<W>(inp1 + i * W);
    const auto b = load_packed<W>(inp2 + i * W);
    Packed<F, W> sum;
    for (int k = 0; k < W; ++k) sum.set(k, a.get(k) + b.get(k));
    store_packed(out + i * W, sum);
  }
}

}  // namespace

template <typename F>
void residual_forward(F* out, const F* inp1, const F* inp2, std::size_t N, cudaStream_t stream) {
  const auto launch = [&](auto w, std::size_t first, std::size_t packs) {
    residual_forward_kernel<decltype(w)::value><<<grid_for(packs), kBlockThreads, 0, stream>>>(
        out + first, inp1 + first, inp2 + first, packs);
    AT_CUDA_CHECK_LAUNCH();
  };
  launch_packed_then_tail<F>(N, launch, out, inp1, inp2);
}

#define AT_RESIDUAL(F) \
  template void residual_forward<F>(F*, const F*, const F*, std::size_t, cudaStream_t);
AT_GPU_INSTANTIATE(AT_RESIDUAL)

}  // namespace autotrain::kernels::gpu
