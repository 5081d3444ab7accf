// The gated MLP activations on the device, SwiGLU and GeGLU, forward and backward, fp32
// arithmetic, one kernel each way over the gate function (its value and slope). One thread owns W
// consecutive columns of one row: W = kPack<F> (16-byte accesses) when I and the pointers allow,
// else 1. Invariant: the input gradient is overwritten (=), never accumulated.
#include "autotrain/kernels/gpu/swiglu.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

__device__ __forceinline__ float sigmoid(float x) {
  return 1.0f / (1.0f + expf(-x));
}

// silu(g) = g · σ(g); d silu(g) / dg = σ(g) · (1 + g · (1 - σ(g))).
struct Silu {
  __device__ static float value(float g) { return g * sigmoid(g); }
  __device__ static float slope(float g) {
    const float s = sigmoid(g);
    return s * (1.0f + g * (1.0f - s));
  }
};

// gelu(g) = g/2 · (1 + tanh(k·(g + a·g³))), PyTorch's approximate="tanh".
struct GeluTanh {
  static constexpr float k = 0.7978845608028654f, a = 0.044715f;
  __device__ static float value(float g) {
    return 0.5f * g * (1.0f + tanhf(k * (g + a * g * g * g)));
  }
  __device__ static float slope(float g) {
    const float th = tanhf(k * (g + a * g * g * g));
    return 0.5f * (1.0f + th) + 0.5f * g * (1.0f - th * th) * k * (1.0f + 3.0f * a * g * g);
  }
};

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

template <typename Gate, int W, typename F>
__global__ void gated_forward_kernel(F* out, const F* gate_up, std::size_t count, int I) {
  for (std::size_t at = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; at < count;
       at += std::size_t{gridDim.x} * blockDim.x) {
    const Pack p = pack_at<W>(at, I);
    const F* gate = gate_up + p.n * 2 * I + p.i;
    const auto g = load_packed<W>(gate);
    const auto u = load_packed<W>(gate + I);
    Packed<F, W> o;
    for (int j = 0; j < W; ++j) o.set(j, Gate::value(g.get(j)) * u.get(j));
    store_packed(out + p.n * I + p.i, o);
  }
}

template <typename Gate, int W, typename F>
__global__ void gated_backward_kernel(F* dgate_up, const F* dout, const F* gate_up,
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
      dgate.set(j, d.get(j) * u.get(j) * Gate::slope(x));
      dup.set(j, d.get(j) * Gate::value(x));
    }
    store_packed(dgate_up + gate_at, dgate);
    store_packed(dgate_up + gate_at + I, dup);
  }
}

void check_width(int I) {
  AT_CHECK(I >= 1, "swiglu: the intermediate size must be positive, got ", I);
}

template <typename Gate, typename F>
void gated_rows(F* out, const F* gate_up, std::size_t N, int I, cudaStream_t stream) {
  check_width(I);
  if (N == 0) return;
  const std::size_t elements = N * static_cast<std::size_t>(I);
  if (rows_packable<F>(static_cast<std::size_t>(I), out, gate_up)) {
    constexpr int W = kPack<F>;
    gated_forward_kernel<Gate, W>
        <<<grid_for(elements / W), kBlockThreads, 0, stream>>>(out, gate_up, elements / W, I);
  } else {
    gated_forward_kernel<Gate, 1>
        <<<grid_for(elements), kBlockThreads, 0, stream>>>(out, gate_up, elements, I);
  }
  AT_CUDA_CHECK_LAUNCH();
}

template <typename Gate, typename F>
void gated_rows_backward(F* dgate_up, const F* dout, const F* gate_up, std::size_t N, int I,
                         cudaStream_t stream) {
  check_width(I);
  AT_CHECK(dgate_up != gate_up, "swiglu_backward: dgate_up may not alias gate_up");
  if (N == 0) return;
  const std::size_t elements = N * static_cast<std::size_t>(I);
  if (rows_packable<F>(static_cast<std::size_t>(I), dgate_up, dout, gate_up)) {
    constexpr int W = kPack<F>;
    gated_backward_kernel<Gate, W><<<grid_for(elements / W), kBlockThreads, 0, stream>>>(
        dgate_up, dout, gate_up, elements / W, I);
  } else {
    gated_backward_kernel<Gate, 1>
        <<<grid_for(elements), kBlockThreads, 0, stream>>>(dgate_up, dout, gate_up, elements, I);
  }
  AT_CUDA_CHECK_LAUNCH();
}

}  // namespace

template <typename F>
void gated_forward(GateActivation gate, F* out, const F* gate_up, std::size_t N, int I,
                   cudaStream_t stream) {
  if (gate == GateActivation::silu) {
    gated_rows<Silu>(out, gate_up, N, I, stream);
  } else {
    gated_rows<GeluTanh>(out, gate_up, N, I, stream);
  }
}

template <typename F>
void gated_backward(GateActivation gate, F* dgate_up, const F* dout, const F* gate_up,
                    std::size_t N, int I, cudaStream_t stream) {
  if (gate == GateActivation::silu) {
    gated_rows_backward<Silu>(dgate_up, dout, gate_up, N, I, stream);
  } else {
    gated_rows_backward<GeluTanh>(dgate_up, dout, gate_up, N, I, stream);
  }
}

template <typename F>
void swiglu_forward(F* out, const F* gate_up, std::size_t N, int I, cudaStream_t stream) {
  gated_forward(GateActivation::silu, out, gate_up, N, I, stream);
}

template <typename F>
void swiglu_backward(F* dgate_up, const F* dout, const F* gate_up, std::size_t N, int I,
                     cudaStream_t stream) {
  gated_backward(GateActivation::silu, dgate_up, dout, gate_up, N, I, stream);
}

#define AT_SWIGLU(F)                                                                            \
  template void swiglu_forward<F>(F*, const F*, std::size_t, int, cudaStream_t);                \
  template void swiglu_backward<F>(F*, const F*, const F*, std::size_t, int, cudaStream_t);     \
  template void gated_forward<F>(GateActivation, F*, const F*, std::size_t, int, cudaStream_t); \
  template void gated_backward<F>(GateActivation, F*, const F*, const F*, std::size_t, int,     \
                                  cudaStream_t);
AT_GPU_INSTANTIATE(AT_SWIGLU)

}  // namespace autotrain::kernels::gpu
