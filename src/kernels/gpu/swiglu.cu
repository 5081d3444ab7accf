// SwiGLU forward and backward on the device, fp32 arithmetic. One thread owns W consecutive
// columns of one row: W = kPack<F> (16-byte accesses) when I and the pointers allow, else 1.
// Invariant: the input gradient is overwritten (=), never accumulated.
#include "autotrain/kernels/gpu/swiglu.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

__device__ __forceinline__ float sigmoid(float x) {
  return 1.0f / (1.0f + expf(-x));
}

// Columns [i, i + W) of row n for the pack index `at` of a row of I / W packs.
struct Pack {
  std::size_t n;
  int i;
};
template <int W>
__device__ __forceinline__ Pack pack_at(std::size_t at, int I) {
  const int packs = I / W;
  return Pack{at / packs, static_cast<int>(at % packs) * W};
}

template <int W, typename F>
__global__ void swiglu_forward_kernel(F* out, const F* gate_up, std::size_t count, int I) {
  for (std::size_t at = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; at < count;
       at += std::size_t{gridDim.x} * blockDim.x) {
    const Pack p = pack_at<W>(at, I);
    const F* gate = gate_up + p.n * 2 * I + p.i;
    const auto g = load_packed<W>(gate);
    const auto u = load_packed<W>(gate + I);
    Packed<F, W> o;
    for (int j = 0; j < W; ++j) o.set(j, g.get(j) * sigmoid(g.get(j)) * u.get(j));
    store_packed(out + p.n * I + p.i, o);
  }
}

// d silu(g) / dg = σ(g) · (1 + g · (1 - σ(g))).
template <int W, typename F>
__global__ void swiglu_backward_kernel(F* dgate_up, const F* dout, const F* gate_up,
                                       std::size_t count, int I) {
  for (std::size_t at = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; at < count;
       at += std::size_t{gridDim.x} * blockDim.x) {
    const Pack p = pack_at<W>(at, I);
    const std::size_t gate_at = p.n * 2 * I + p.i;
    const auto g = load_packed<W>(gate_up + gate_at);
    const auto u = load_packed<W>(gate_up + gate_at + I);
    const auto d = load_packed<W>(dout + p.n * I + p.i);
    Packed<F, W> dgate, dup;
    for (int j = 0; j < W; ++j) {
      const float x = g.get(j);
      const float s = sigmoid(x);
      dgate.set(j, d.get(j) * u.get(j) * s * (1.0f + x * (1.0f - s)));
      dup.set(j, d.get(j) * x * s);
    }
    store_packed(dgate_up + gate_at, dgate);
    store_packed(dgate_up + gate_at + I, dup);
  }
}

void check_width(int I) {
  AT_CHECK(I >= 1, "swiglu: the intermediate size must be positive, got ", I);
}

}  // namespace

template <typename F>
void swiglu_forward(F* out, const F* gate_up, std::size_t N, int I, cudaStream_t stream) {
  check_width(I);
  if (N == 0) return;
  const std::size_t elements = N * static_cast<std::size_t>(I);
  if (rows_packable<F>(static_cast<std::size_t>(I), out, gate_up)) {
    constexpr int W = kPack<F>;
    swiglu_forward_kernel<W>
        <<<grid_for(elements / W), kBlockThreads, 0, stream>>>(out, gate_up, elements / W, I);
  } else {
    swiglu_forward_kernel<1>
        <<<grid_for(elements), kBlockThreads, 0, stream>>>(out, gate_up, elements, I);
  }
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void swiglu_backward(F* dgate_up, const F* dout, const F* gate_up, std::size_t N, int I,
                     cudaStream_t stream) {
  check_width(I);
  AT_CHECK(dgate_up != gate_up, "swiglu_backward: dgate_up may not alias gate_up");
  if (N == 0) return;
  const std::size_t elements = N * static_cast<std::size_t>(I);
  if (rows_packable<F>(static_cast<std::size_t>(I), dgate_up, dout, gate_up)) {
    constexpr int W = kPack<F>;
    swiglu_backward_kernel<W><<<grid_for(elements / W), kBlockThreads, 0, stream>>>(
        dgate_up, dout, gate_up, elements / W, I);
  } else {
    swiglu_backward_kernel<1>
        <<<grid_for(elements), kBlockThreads, 0, stream>>>(dgate_up, dout, gate_up, elements, I);
  }
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_SWIGLU(F)                                                             \
  template void swiglu_forward<F>(F*, const F*, std::size_t, int, cudaStream_t); \
  template void swiglu_backward<F>(F*, const F*, const F*, std::size_t, int, cudaStream_t);
AT_GPU_INSTANTIATE(AT_SWIGLU)

}  // namespace autotrain::kernels::gpu
