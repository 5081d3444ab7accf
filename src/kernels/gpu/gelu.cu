// GELU (tanh approximation) forward and backward on the device, fp32 arithmetic.
// Invariant: the input gradient is overwritten (=), never accumulated.
// Each thread moves W elements per access (kPack<F>: 128-bit loads/stores) over the whole packs;
// a scalar launch (W = 1) takes the tail and any buffer that is not 16-byte aligned.
#include "autotrain/kernels/gpu/gelu.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

// packs = elements / W.
template <int W, typename F>
__global__ void gelu_forward_kernel(F* out, const F* inp, std::size_t packs) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < packs;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const auto in = load_packed<W>(inp + i * W);
    Packed<F, W> result;
    for (int k = 0; k < W; ++k) {
      const float x = in.get(k);
      result.set(k, 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kCubic * x * x * x))));
    }
    store_packed(out + i * W, result);
  }
}

template <int W, typename F>
__global__ void gelu_backward_kernel(F* dinp, const F* inp, const F* dout, std::size_t packs) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < packs;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const auto in = load_packed<W>(inp + i * W);
    const auto d = load_packed<W>(dout + i * W);
    Packed<F, W> result;
    for (int k = 0; k < W; ++k) {
      const float x = in.get(k);
      const float th = tanhf(kSqrt2OverPi * (x + kCubic * x * x * x));
      const float sech2 = 1.0f - th * th;
      const float grad =
          0.5f * (1.0f + th) + 0.5f * x * sech2 * kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
      result.set(k, grad * d.get(k));
    }
    store_packed(dinp + i * W, result);
  }
}

}  // namespace

template <typename F>
void gelu_forward(F* out, const F* inp, std::size_t N, cudaStream_t stream) {
  const auto launch = [&](auto w, std::size_t first, std::size_t packs) {
    gelu_forward_kernel<decltype(w)::value>
        <<<grid_for(packs), kBlockThreads, 0, stream>>>(out + first, inp + first, packs);
    AT_CUDA_CHECK_LAUNCH();
  };
  launch_packed_then_tail<F>(N, launch, out, inp);
}

template <typename F>
void gelu_backward(F* dinp, const F* inp, const F* dout, std::size_t N, cudaStream_t stream) {
  const auto launch = [&](auto w, std::size_t first, std::size_t packs) {
    gelu_backward_kernel<decltype(w)::value><<<grid_for(packs), kBlockThreads, 0, stream>>>(
        dinp + first, inp + first, dout + first, packs);
    AT_CUDA_CHECK_LAUNCH();
  };
  launch_packed_then_tail<F>(N, launch, dinp, inp, dout);
}

#define AT_GELU(F)                                                        \
  template void gelu_forward<F>(F*, const F*, std::size_t, cudaStream_t); \
  template void gelu_backward<F>(F*, const F*, const F*, std::size_t, cudaStream_t);
AT_GPU_INSTANTIATE(AT_GELU)

}  // namespace autotrain::kernels::gpu
