// Residual connection forward and backward on the device, fp32 arithmetic.
// Invariant: both input gradients accumulate (+=): the residual stream's gradient sums the skip
// path and the block's path.
// Each thread moves W elements per access (kPack<F>: 128-bit loads/stores) over the whole packs;
// a scalar launch (W = 1) takes the tail and any buffer that is not 16-byte aligned.
#include "autotrain/kernels/cuda/residual.hpp"
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

template <int W, typename F>
__global__ void residual_backward_kernel(F* dinp1, F* dinp2, const F* dout, std::size_t packs) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < packs;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const auto d = load_packed<W>(dout + i * W);
    auto d1 = load_packed<W>(dinp1 + i * W);
    auto d2 = load_packed<W>(dinp2 + i * W);
    for (int k = 0; k < W; ++k) {
      d1.set(k, d1.get(k) + d.get(k));
      d2.set(k, d2.get(k) + d.get(k));
    }
    store_packed(dinp1 + i * W, d1);
    store_packed(dinp2 + i * W, d2);
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

template <typename F>
void residual_backward(F* dinp1, F* dinp2, const F* dout, std::size_t N, cudaStream_t stream) {
  const auto launch = [&](auto w, std::size_t first, std::size_t packs) {
    residual_backward_kernel<decltype(w)::value><<<grid_for(packs), kBlockThreads, 0, stream>>>(
        dinp1 + first, dinp2 + first, dout + first, packs);
    AT_CUDA_CHECK_LAUNCH();
  };
  launch_packed_then_tail<F>(N, launch, dinp1, dinp2, dout);
}

#define AT_RESIDUAL(F)                                                                  \
  template void residual_forward<F>(F*, const F*, const F*, std::size_t, cudaStream_t); \
  template void residual_backward<F>(F*, F*, const F*, std::size_t, cudaStream_t);
AT_GPU_INSTANTIATE(AT_RESIDUAL)

}  // namespace autotrain::kernels::gpu
