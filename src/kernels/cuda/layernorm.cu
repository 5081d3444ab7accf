// LayerNorm forward and backward on the device, fp32 arithmetic and statistics.
// Invariant: parameter gradients accumulate (+=); the input gradient also accumulates (+=)
// because a LayerNorm always reads the residual stream. dweight and dbias are summed over rows
// in two fixed-order stages (per-chunk partials, then chunks in order): deterministic, no atomics.
#include "autotrain/kernels/cuda/layernorm.hpp"
#include "autotrain/kernels/layernorm.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

constexpr int kRowsPerWarpBlock = kBlockThreads / kWarp;  // one warp per row
constexpr int kChunkRows = 256;                           // rows per partial sum
constexpr int kPartialRows = 8;                           // threadIdx.y extent of the partials

template <typename F>
__global__ void layernorm_forward_kernel(F* out, float* mean, float* rstd, const F* inp,
                                         const F* weight, const F* bias, std::size_t N, int C) {
  const std::size_t n = blockIdx.x * std::size_t{kRowsPerWarpBlock} + threadIdx.x / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (n >= N) return;
  const F* x = inp + n * C;
  float sum = 0.0f;
  for (int c = lane; c < C; c += kWarp) sum += to_float(x[c]);
  const float m = warp_sum(sum) / static_cast<float>(C);
  float var = 0.0f;
  for (int c = lane; c < C; c += kWarp) {
    const float d = to_float(x[c]) - m;
    var += d * d;
  }
  const float s = rsqrtf(warp_sum(var) / static_cast<float>(C) + static_cast<float>(kLayerNormEps));
  F* o = out + n * C;
  for (int c = lane; c < C; c += kWarp) {
    o[c] = from_float<F>((to_float(x[c]) - m) * s * to_float(weight[c]) + to_float(bias[c]));
  }
  if (lane == 0) {
    mean[n] = m;
    rstd[n] = s;
  }
}

// dx = rstd · (g - mean_c(g) - x̂ · mean_c(g · x̂)) with x̂ = (x - mean)·rstd, g = dout·weight.
template <typename F>
__global__ void layernorm_dinp_kernel(F* dinp, const F* dout, const F* inp, const F* weight,
                                      const float* mean, const float* rstd, std::size_t N, int C) {
  const std::size_t n = blockIdx.x * std::size_t{kRowsPerWarpBlock} + threadIdx.x / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (n >= N) return;
  const F* x = inp + n * C;
  const F* d = dout + n * C;
  const float m = mean[n];
  const float s = rstd[n];
  float g_sum = 0.0f;
  float gx_sum = 0.0f;
  for (int c = lane; c < C; c += kWarp) {
    const float g = to_float(d[c]) * to_float(weight[c]);
    g_sum += g;
    gx_sum += g * (to_float(x[c]) - m) * s;
  }
  const float g_mean = warp_sum(g_sum) / static_cast<float>(C);
  const float gx_mean = warp_sum(gx_sum) / static_cast<float>(C);
  F* dx = dinp + n * C;
  for (int c = lane; c < C; c += kWarp) {
    const float xhat = (to_float(x[c]) - m) * s;
    const float g = to_float(d[c]) * to_float(weight[c]);
    dx[c] = from_float<F>(to_float(dx[c]) + s * (g - g_mean - xhat * gx_mean));
  }
}

// Block (32 channels, kPartialRows) per (channel tile, chunk of kChunkRows rows):
// partial_w[chunk, c] = Σ_rows dout·x̂, partial_b[chunk, c] = Σ_rows dout, each in a fixed order.
template <typename F>
__global__ void layernorm_partials_kernel(float* partial_w, float* partial_b, const F* dout,
                                          const F* inp, const float* mean, const float* rstd,
                                          std::size_t N, int C) {
  __shared__ float shared_w[kPartialRows][kWarp];
  __shared__ float shared_b[kPartialRows][kWarp];
  const int c = static_cast<int>(blockIdx.x) * kWarp + static_cast<int>(threadIdx.x);
  const std::size_t first = std::size_t{blockIdx.y} * kChunkRows;
  const std::size_t last = first + kChunkRows < N ? first + kChunkRows : N;
  float w = 0.0f;
  float b = 0.0f;
  if (c < C) {
    for (std::size_t n = first + threadIdx.y; n < last; n += kPartialRows) {
      const float d = to_float(dout[n * C + c]);
      w += d * (to_float(inp[n * C + c]) - mean[n]) * rstd[n];
      b += d;
    }
  }
  shared_w[threadIdx.y][threadIdx.x] = w;
  shared_b[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int y = 1; y < kPartialRows; ++y) {
      w += shared_w[y][threadIdx.x];
      b += shared_b[y][threadIdx.x];
    }
    partial_w[std::size_t{blockIdx.y} * C + c] = w;
    partial_b[std::size_t{blockIdx.y} * C + c] = b;
  }
}

template <typename F>
__global__ void layernorm_params_kernel(F* dweight, F* dbias, const float* partial_w,
                                        const float* partial_b, unsigned chunks, int C) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= C) return;
  float w = 0.0f;
  float b = 0.0f;
  for (unsigned chunk = 0; chunk < chunks; ++chunk) {
    w += partial_w[std::size_t{chunk} * C + c];
    b += partial_b[std::size_t{chunk} * C + c];
  }
  dweight[c] = from_float<F>(to_float(dweight[c]) + w);
  dbias[c] = from_float<F>(to_float(dbias[c]) + b);
}

}  // namespace

std::size_t layernorm_backward_scratch_floats(std::size_t N, int C) {
  return 2 * std::size_t{ceil_div(N, kChunkRows)} * static_cast<std::size_t>(C);
}

template <typename F>
void layernorm_forward(F* out, float* mean, float* rstd, const F* inp, const F* weight,
                       const F* bias, std::size_t N, int C, cudaStream_t stream) {
  if (N == 0) return;
  layernorm_forward_kernel<<<ceil_div(N, kRowsPerWarpBlock), kBlockThreads, 0, stream>>>(
      out, mean, rstd, inp, weight, bias, N, C);
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void layernorm_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp, const F* weight,
                        const float* mean, const float* rstd, float* scratch, std::size_t N, int C,
                        cudaStream_t stream) {
  if (N == 0) return;
  layernorm_dinp_kernel<<<ceil_div(N, kRowsPerWarpBlock), kBlockThreads, 0, stream>>>(
      dinp, dout, inp, weight, mean, rstd, N, C);
  AT_CUDA_CHECK_LAUNCH();
  const unsigned chunks = ceil_div(N, kChunkRows);
  float* partial_w = scratch;
  float* partial_b = scratch + std::size_t{chunks} * C;
  const dim3 grid(ceil_div(static_cast<std::size_t>(C), kWarp), chunks);
  layernorm_partials_kernel<<<grid, dim3(kWarp, kPartialRows), 0, stream>>>(
      partial_w, partial_b, dout, inp, mean, rstd, N, C);
  AT_CUDA_CHECK_LAUNCH();
  layernorm_params_kernel<<<ceil_div(static_cast<std::size_t>(C), kBlockThreads), kBlockThreads, 0,
                            stream>>>(dweight, dbias, partial_w, partial_b, chunks, C);
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_LAYERNORM(F)                                                                       \
  template void layernorm_forward<F>(F*, float*, float*, const F*, const F*, const F*,        \
                                     std::size_t, int, cudaStream_t);                         \
  template void layernorm_backward<F>(F*, F*, F*, const F*, const F*, const F*, const float*, \
                                      const float*, float*, std::size_t, int, cudaStream_t);
AT_GPU_INSTANTIATE(AT_LAYERNORM)

}  // namespace autotrain::kernels::gpu
