// GELU (tanh approximation) forward and backward on the device, fp32 arithmetic.
// Invariant: the input gradient is overwritten (=), never accumulated.
// Each thread moves W elements per access (kPack<F>: 128-bit loads/stores) over the whole packs;
// a scalar launch (W = 1) takes the tail and any buffer that is not 16-byte aligned.
#include "autotrain/kernels/cuda/gelu.hpp"
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
  constexpr int W = kPack<F>;
  const std::size_t packed = packed_prefix<F>(N, out, inp);
  if (packed > 0) {
    gelu_forward_kernel<W>
        <<<grid_for(packed / W), kBlockThreads, 0, stream>>>(out, inp, packed / W);
    AT_CUDA_CHECK_LAUNCH();
  }
  if (packed < N) {
    gelu_forward_kernel<1><<<grid_for(N - packed), kBlockThreads, 0, stream>>>(
        out + packed, inp + packed, N - packed);
    AT_CUDA_CHECK_LAUNCH();
  }
}

template <typename F>
void gelu_backward(F* dinp, const F* inp, const F* dout, std::size_t N, cudaStream_t stream) {
  constexpr int W = kPack<F>;
  const std::size_t packed = packed_prefix<F>(N, dinp, inp, dout);
  if (packed > 0) {
    gelu_backward_kernel<W>
        <<<grid_for(packed / W), kBlockThreads, 0, stream>>>(dinp, inp, dout, packed / W);
    AT_CUDA_CHECK_LAUNCH();
  }
  if (packed < N) {
    gelu_backward_kernel<1><<<grid_for(N - packed), kBlockThreads, 0, stream>>>(
        dinp + packed, inp + packed, dout + packed, N - packed);
    AT_CUDA_CHECK_LAUNCH();
  }
}

#define AT_GELU(F)                                                        \
  template void gelu_forward<F>(F*, const F*, std::size_t, cudaStream_t); \
  template void gelu_backward<F>(F*, const F*, const F*, std::size_t, cudaStream_t);
AT_GPU_INSTANTIATE(AT_GELU)

}  // namespace autotrain::kernels::gpu
