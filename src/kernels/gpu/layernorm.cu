// LayerNorm forward and backward on the device, fp32 arithmetic and statistics.
// Invariant: parameter gradients accumulate (+=); the input gradient also accumulates (+=)
// because a LayerNorm always reads the residual stream. dweight and dbias are summed over rows
// in two fixed-order stages (per-chunk partials, then chunks in order): deterministic, no atomics.
//
// Both directions give a row to one warp and keep it in registers: lane l holds packs
// p = l, l + 32, ... of W elements (W = kPack<F>, 16-byte accesses, when C and the pointers allow;
// else W = 1). kPacks packs per lane cover C <= 32·kPacks·W; C = 768 in bf16 is 3 packs of 8.
// So forward reads x once; backward reads dout and x once and dinp once, and accumulates the
// lane's channels of dweight/dbias in registers on the way (no second pass for the partials).
// ptxas (sm_90, bf16): C = 768 forward 55 registers, backward 128 (launch bound); no spills on the
// packed path up to C = 2048 (the scalar path keeps 64 values per lane in local memory above C =
// 1024).
#include <type_traits>

#include "autotrain/kernels/gpu/layernorm.hpp"
#include "autotrain/kernels/layernorm.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

constexpr int kWarpsPerBlock = kBlockThreads / kWarp;  // one warp per row
constexpr int kChunkRows = 64;                         // rows per partial sum (one block)
constexpr int kMaxValuesPerLane = kLayerNormMaxChannels / kWarp;  // registers per lane
constexpr int kPartialRows = 8;  // threadIdx.y extent of the final sum

template <int W, int kPacks, typename F>
__global__ void layernorm_forward_kernel(F* out, float* mean, float* rstd, const F* inp,
                                         const F* weight, const F* bias, std::size_t N, int C) {
  const std::size_t n = blockIdx.x * std::size_t{kWarpsPerBlock} + threadIdx.x / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (n >= N) return;
  const int packs = C / W;
  const F* x_row = inp + n * C;
  float x[kPacks][W] = {};
  float sum = 0.0f;
  for (int k = 0; k < kPacks; ++k) {
    const int p = lane + k * kWarp;
    if (p >= packs) continue;
    const auto values = load_packed<W>(x_row + p * W);
    for (int i = 0; i < W; ++i) {
      x[k][i] = values.get(i);
      sum += x[k][i];
    }
  }
  const float m = warp_sum(sum) / static_cast<float>(C);
  float var = 0.0f;
  for (int k = 0; k < kPacks; ++k) {
    if (lane + k * kWarp >= packs) continue;
    for (int i = 0; i < W; ++i) var += (x[k][i] - m) * (x[k][i] - m);
  }
  const float s = rsqrtf(warp_sum(var) / static_cast<float>(C) + static_cast<float>(kLayerNormEps));
  F* o = out + n * C;
  for (int k = 0; k < kPacks; ++k) {
    const int p = lane + k * kWarp;
    if (p >= packs) continue;
    const auto w = load_packed<W>(weight + p * W);
    const auto b = load_packed<W>(bias + p * W);
    Packed<F, W> y;
    for (int i = 0; i < W; ++i) y.set(i, (x[k][i] - m) * s * w.get(i) + b.get(i));
    store_packed(o + p * W, y);
  }
  if (lane == 0) {
    mean[n] = m;
    rstd[n] = s;
  }
}

// Block per chunk of kChunkRows rows; warp w takes rows first + w, first + w + 8, ... in order.
// Per row: dx = rstd · (g - mean_c(g) - x̂ · mean_c(g · x̂)), x̂ = (x - mean)·rstd, g = dout·weight,
// and the lane adds dout·x̂ and dout to its channels' partials. The block then sums its warps in
// order w = 0..7 through shared memory, one pack slot k at a time:
// partial_w[chunk, c] = Σ_rows dout·x̂, partial_b[chunk, c] = Σ_rows dout.
// Up to 24 values per lane (C = 768 in 16 bits) the launch bound fits two blocks per SM (at most
// 128 registers, no spills at sm_90); wider rows need more registers than that without spilling.
template <int W, int kPacks, typename F>
__global__ void __launch_bounds__(kBlockThreads, kPacks* W <= 24 ? 2 : 1)
    layernorm_backward_kernel(F* dinp, float* partial_w, float* partial_b, const F* dout,
                              const F* inp, const F* weight, const float* mean, const float* rstd,
                              std::size_t N, int C) {
  __shared__ float staged_w[kWarpsPerBlock][kWarp * W];
  __shared__ float staged_b[kWarpsPerBlock][kWarp * W];
  const int warp = static_cast<int>(threadIdx.x / kWarp);
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const int packs = C / W;
  const std::size_t first = std::size_t{blockIdx.x} * kChunkRows;
  const std::size_t last = first + kChunkRows < N ? first + kChunkRows : N;
  float dw[kPacks][W] = {};
  float db[kPacks][W] = {};
  for (std::size_t n = first + warp; n < last; n += kWarpsPerBlock) {
    const float m = mean[n];
    const float s = rstd[n];
    // The row's dout and x, kept as F (half the registers of fp32) until the second loop; above
    // 32 values per lane they would spill next to the partials, so the second loop re-reads
    // them (from L1: the warp has just read the row).
    constexpr bool kKeepRow = kPacks * W <= 32;
    Packed<F, W> d[kKeepRow ? kPacks : 1] = {};
    Packed<F, W> x[kKeepRow ? kPacks : 1] = {};
    float g_sum = 0.0f;
    float gx_sum = 0.0f;
    for (int k = 0; k < kPacks; ++k) {
      const int p = lane + k * kWarp;
      if (p >= packs) continue;
      const auto dk = load_packed<W>(dout + n * C + p * W);
      const auto xk = load_packed<W>(inp + n * C + p * W);
      const auto w = load_packed<W>(weight + p * W);
      if constexpr (kKeepRow) {
        d[k] = dk;
        x[k] = xk;
      }
      for (int i = 0; i < W; ++i) {
        const float xhat = (xk.get(i) - m) * s;
        const float g = dk.get(i) * w.get(i);
        g_sum += g;
        gx_sum += g * xhat;
        dw[k][i] += dk.get(i) * xhat;
        db[k][i] += dk.get(i);
      }
    }
    const float g_mean = warp_sum(g_sum) / static_cast<float>(C);
    const float gx_mean = warp_sum(gx_sum) / static_cast<float>(C);
    for (int k = 0; k < kPacks; ++k) {
      const int p = lane + k * kWarp;
      if (p >= packs) continue;
      F* dx_address = dinp + n * C + p * W;
      auto dx = load_packed<W>(dx_address);
      const auto w = load_packed<W>(weight + p * W);
      Packed<F, W> dk, xk;
      if constexpr (kKeepRow) {
        dk = d[k];
        xk = x[k];
      } else {
        dk = load_packed<W>(dout + n * C + p * W);
        xk = load_packed<W>(inp + n * C + p * W);
      }
      for (int i = 0; i < W; ++i) {
        const float xhat = (xk.get(i) - m) * s;
        const float g = dk.get(i) * w.get(i);
        dx.set(i, dx.get(i) + s * (g - g_mean - xhat * gx_mean));
      }
      store_packed(dx_address, dx);
    }
  }
  // Pack slot k of every lane covers channels [32·k·W, 32·(k+1)·W): thread t < 32·W sums
  // channel 32·k·W + t over the warps in order.
  const int t = static_cast<int>(threadIdx.x);
  for (int k = 0; k < kPacks; ++k) {
    for (int i = 0; i < W; ++i) {
      staged_w[warp][lane * W + i] = dw[k][i];
      staged_b[warp][lane * W + i] = db[k][i];
    }
    __syncthreads();
    const int c = k * kWarp * W + t;
    if (t < kWarp * W && c < C) {
      float w_sum = 0.0f;
      float b_sum = 0.0f;
      for (int w = 0; w < kWarpsPerBlock; ++w) {
        w_sum += staged_w[w][t];
        b_sum += staged_b[w][t];
      }
      partial_w[std::size_t{blockIdx.x} * C + c] = w_sum;
      partial_b[std::size_t{blockIdx.x} * C + c] = b_sum;
    }
    __syncthreads();  // the next slot overwrites staged_*
  }
}

// Block (32 channels, kPartialRows): thread (x, y) sums chunks y, y + 8, ... in order, then
// y = 0 adds the 8 sums in order and accumulates into dweight, dbias.
template <typename F>
__global__ void layernorm_params_kernel(F* dweight, F* dbias, const float* partial_w,
                                        const float* partial_b, unsigned chunks, int C) {
  __shared__ float shared_w[kPartialRows][kWarp];
  __shared__ float shared_b[kPartialRows][kWarp];
  const int c = static_cast<int>(blockIdx.x) * kWarp + static_cast<int>(threadIdx.x);
  float w = 0.0f;
  float b = 0.0f;
  if (c < C) {
    for (unsigned chunk = threadIdx.y; chunk < chunks; chunk += kPartialRows) {
      w += partial_w[std::size_t{chunk} * C + c];
      b += partial_b[std::size_t{chunk} * C + c];
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
    dweight[c] = from_float<F>(to_float(dweight[c]) + w);
    dbias[c] = from_float<F>(to_float(dbias[c]) + b);
  }
}

// Values per lane held in registers for a row of C: the fewest of 8, 16, 24, 32, 64 that cover
// C in packs of W (instantiating every count would multiply the kernels for little gain).
int values_per_lane(int C, int W) {
  const int needed =
      static_cast<int>(ceil_div(static_cast<std::size_t>(C), std::size_t{kWarp} * W)) * W;
  for (const int values : {8, 16, 24, 32}) {
    if (needed <= values) return values;
  }
  return kMaxValuesPerLane;
}

// Calls run(std::integral_constant<int, packs>{}) with the packs of W per lane that
// values_per_lane(C, W) picks: the kernels' template argument.
template <int W, typename Run>
void with_packs_per_lane(int C, const Run& run) {
  switch (values_per_lane(C, W)) {
    case 8:
      return run(std::integral_constant<int, 8 / W>{});
    case 16:
      return run(std::integral_constant<int, 16 / W>{});
    case 24:
      return run(std::integral_constant<int, 24 / W>{});
    case 32:
      return run(std::integral_constant<int, 32 / W>{});
    default:
      return run(std::integral_constant<int, kMaxValuesPerLane / W>{});
  }
}

template <int W, typename F>
void forward_rows(F* out, float* mean, float* rstd, const F* inp, const F* weight, const F* bias,
                  std::size_t N, int C, cudaStream_t stream) {
  const unsigned blocks = ceil_div(N, kWarpsPerBlock);
  with_packs_per_lane<W>(C, [&](auto packs) {
    layernorm_forward_kernel<W, decltype(packs)::value>
        <<<blocks, kBlockThreads, 0, stream>>>(out, mean, rstd, inp, weight, bias, N, C);
  });
  AT_CUDA_CHECK_LAUNCH();
}

template <int W, typename F>
void backward_rows(F* dinp, float* partial_w, float* partial_b, const F* dout, const F* inp,
                   const F* weight, const float* mean, const float* rstd, std::size_t N, int C,
                   cudaStream_t stream) {
  const unsigned blocks = ceil_div(N, kChunkRows);
  with_packs_per_lane<W>(C, [&](auto packs) {
    layernorm_backward_kernel<W, decltype(packs)::value><<<blocks, kBlockThreads, 0, stream>>>(
        dinp, partial_w, partial_b, dout, inp, weight, mean, rstd, N, C);
  });
  AT_CUDA_CHECK_LAUNCH();
}

void check_channels(int C) {
  AT_CHECK(C >= 1 && C <= kWarp * kMaxValuesPerLane, "layernorm: C = ", C,
           " channels; the CUDA kernels hold a row in one warp's registers, at most ",
           kWarp * kMaxValuesPerLane);
}

}  // namespace

std::size_t layernorm_backward_scratch_floats(std::size_t N, int C) {
  return 2 * std::size_t{ceil_div(N, kChunkRows)} * static_cast<std::size_t>(C);
}

template <typename F>
void layernorm_forward(F* out, float* mean, float* rstd, const F* inp, const F* weight,
                       const F* bias, std::size_t N, int C, cudaStream_t stream) {
  check_channels(C);
  if (N == 0) return;
  if (rows_packable<F>(static_cast<std::size_t>(C), out, inp, weight, bias)) {
    forward_rows<kPack<F>>(out, mean, rstd, inp, weight, bias, N, C, stream);
  } else {
    forward_rows<1>(out, mean, rstd, inp, weight, bias, N, C, stream);
  }
}

template <typename F>
void layernorm_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp, const F* weight,
                        const float* mean, const float* rstd, float* scratch, std::size_t N, int C,
                        cudaStream_t stream) {
  check_channels(C);
  if (N == 0) return;
  const unsigned chunks = ceil_div(N, kChunkRows);
  float* partial_w = scratch;
  float* partial_b = scratch + std::size_t{chunks} * C;
  if (rows_packable<F>(static_cast<std::size_t>(C), dinp, dout, inp, weight)) {
    backward_rows<kPack<F>>(dinp, partial_w, partial_b, dout, inp, weight, mean, rstd, N, C,
                            stream);
  } else {
    backward_rows<1>(dinp, partial_w, partial_b, dout, inp, weight, mean, rstd, N, C, stream);
  }
  layernorm_params_kernel<<<ceil_div(static_cast<std::size_t>(C), kWarp), dim3(kWarp, kPartialRows),
                            0, stream>>>(dweight, dbias, partial_w, partial_b, chunks, C);
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_LAYERNORM(F)                                                                       \
  template void layernorm_forward<F>(F*, float*, float*, const F*, const F*, const F*,        \
                                     std::size_t, int, cudaStream_t);                         \
  template void layernorm_backward<F>(F*, F*, F*, const F*, const F*, const F*, const float*, \
                                      const float*, float*, std::size_t, int, cudaStream_t);
AT_GPU_INSTANTIATE(AT_LAYERNORM)

}  // namespace autotrain::kernels::gpu
