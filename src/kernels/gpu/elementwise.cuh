#pragma once
// Elementwise kernels over flat device buffers: out[i] = op(in_1[i], ..., in_k[i]) for every
// element i, with op a functor whose __device__ operator() maps the inputs' fp32 values to the
// output's (rounded to Out once, as from_float). An output may also be an input (out += part).
// Each thread moves W elements of every buffer per access, W = kPack of the narrowest element type
// (128-bit loads/stores of it) over the whole packs; a scalar launch (W = 1) takes the tail and
// any buffer that is not 16-byte aligned (launch_packed_then_tail).
#include <algorithm>

#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

// a + b: a residual connection, or a part added into a sum.
struct Add {
  __device__ float operator()(float a, float b) const { return a + b; }
};

template <int W, typename Op, typename Out, typename... In>
__device__ __forceinline__ void apply_to_pack(const Op& op, Out* out, const Packed<In, W>&... in) {
  Packed<Out, W> result;
  for (int k = 0; k < W; ++k) result.set(k, op(in.get(k)...));
  store_packed(out, result);
}

// packs = elements / W.
template <int W, typename Op, typename Out, typename... In>
__global__ void elementwise_kernel(Op op, Out* out, std::size_t packs, const In*... in) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < packs;
       i += std::size_t{gridDim.x} * blockDim.x) {
    apply_to_pack<W>(op, out + i * W, load_packed<W>(in + i * W)...);
  }
}

// Queues out[i] = op(in[i]...) for i < n on `stream`.
template <typename Op, typename Out, typename... In>
void launch_elementwise(const Op& op, std::size_t n, cudaStream_t stream, Out* out,
                        const In*... in) {
  constexpr int kWidest = std::max({kPack<Out>, kPack<In>...});
  const auto launch = [&](auto w, std::size_t first, std::size_t packs) {
    elementwise_kernel<decltype(w)::value>
        <<<grid_for(packs), kBlockThreads, 0, stream>>>(op, out + first, packs, (in + first)...);
    AT_CUDA_CHECK_LAUNCH();
  };
  launch_packed_then_tail<kWidest>(n, launch, out, in...);
}

}  // namespace
}  // namespace autotrain::kernels::gpu
