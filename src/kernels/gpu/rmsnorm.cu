// RMSNorm forward and backward on the device, fp32 arithmetic and statistics.
// Invariant: parameter gradients accumulate (+=); the input gradient also accumulates (+=), as in
// layernorm_backward, because the block norms read the residual stream. dweight is summed over
// the vectors in two fixed-order stages (per-chunk partials, then the chunks in order):
// deterministic, no atomics.
//
// One warp owns one vector (r, h) and walks it in packs of W elements (W = kPack<F>, 16-byte
// accesses, when C, the row stride and the pointers allow; else W = 1): lane l takes packs l,
// l + 32, ... Each direction reads the vector twice, once for its sum and once to write; the
// second read comes from L1 (the warp has just read the same bytes). Nothing per channel stays in
// registers, so every C up to kRmsNormMaxChannels takes the same kernels: the hidden size of
// Llama 3 8B (4096) as well as Qwen3's per-head norms (C = 128 on a qkv row).
// dweight's partials are a column sum over the vectors of a chunk (neighbouring threads read
// neighbouring packs of one vector), a second pass over dout and inp.
#include "autotrain/kernels/gpu/rmsnorm.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

constexpr int kWarpsPerBlock = kBlockThreads / kWarp;  // one warp per vector
constexpr int kChunkVectors = 128;                     // vectors per partial sum of dweight
constexpr int kPartialRows = 8;                        // threadIdx.y extent of the sums

// Element offset of vector v = r·heads + h.
__device__ __forceinline__ std::size_t vector_start(std::size_t v, int heads, int C,
                                                    std::size_t stride) {
  return v / heads * stride + v % heads * static_cast<std::size_t>(C);
}

template <int W, typename F>
__global__ void rmsnorm_forward_kernel(F* out, float* rstd, const F* inp, const F* weight,
                                       std::size_t vectors, int heads, int C, std::size_t stride,
                                       float eps, float w0) {
  const std::size_t v = blockIdx.x * std::size_t{kWarpsPerBlock} + threadIdx.x / kWarp;
  if (v >= vectors) return;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const int packs = C / W;
  const std::size_t first = vector_start(v, heads, C, stride);
  const F* x = inp + first;
  float sum_squares = 0.0f;
  for (int p = lane; p < packs; p += kWarp) {
    const auto values = load_packed<W>(x + p * W);
    for (int i = 0; i < W; ++i) sum_squares += values.get(i) * values.get(i);
  }
  const float s = rsqrtf(warp_sum(sum_squares) / static_cast<float>(C) + eps);
  F* o = out + first;
  for (int p = lane; p < packs; p += kWarp) {
    const auto values = load_packed<W>(x + p * W);
    const auto w = load_packed<W>(weight + p * W);
    Packed<F, W> y;
    for (int i = 0; i < W; ++i) y.set(i, values.get(i) * s * (w0 + w.get(i)));
    store_packed(o + p * W, y);
  }
  if (lane == 0) rstd[v] = s;
}

// dx += rstd · (g - x̂ · mean_c(g · x̂)) with x̂ = x·rstd and g = dout·(w0 + weight).
template <int W, typename F>
__global__ void rmsnorm_backward_kernel(F* dinp, const F* dout, const F* inp, const F* weight,
                                        const float* rstd, std::size_t vectors, int heads, int C,
                                        std::size_t stride, float w0) {
  const std::size_t v = blockIdx.x * std::size_t{kWarpsPerBlock} + threadIdx.x / kWarp;
  if (v >= vectors) return;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const int packs = C / W;
  const std::size_t first = vector_start(v, heads, C, stride);
  const float s = rstd[v];
  float gx_sum = 0.0f;
  for (int p = lane; p < packs; p += kWarp) {
    const auto d = load_packed<W>(dout + first + p * W);
    const auto x = load_packed<W>(inp + first + p * W);
    const auto w = load_packed<W>(weight + p * W);
    for (int i = 0; i < W; ++i) gx_sum += d.get(i) * (w0 + w.get(i)) * (x.get(i) * s);
  }
  const float gx_mean = warp_sum(gx_sum) / static_cast<float>(C);
  for (int p = lane; p < packs; p += kWarp) {
    F* dx_address = dinp + first + p * W;
    auto dx = load_packed<W>(dx_address);
    const auto d = load_packed<W>(dout + first + p * W);
    const auto x = load_packed<W>(inp + first + p * W);
    const auto w = load_packed<W>(weight + p * W);
    for (int i = 0; i < W; ++i) {
      dx.set(i, dx.get(i) + s * (d.get(i) * (w0 + w.get(i)) - x.get(i) * s * gx_mean));
    }
    store_packed(dx_address, dx);
  }
}

// Block (32 threads of W channels each, kPartialRows) per (channel tile, chunk of kChunkVectors
// vectors): partial[chunk, c] = Σ_v dout[v, c]·x̂[v, c], thread y summing vectors y, y + 8, ...
// of the chunk, then y = 0 adding the 8 sums in order.
template <int W, typename F>
__global__ void rmsnorm_weight_partials_kernel(float* partial, const F* dout, const F* inp,
                                               const float* rstd, std::size_t vectors, int heads,
                                               int C, std::size_t stride) {
  __shared__ float shared[kPartialRows][kWarp * W];
  const int c = (static_cast<int>(blockIdx.x) * kWarp + static_cast<int>(threadIdx.x)) * W;
  const std::size_t first = std::size_t{blockIdx.y} * kChunkVectors;
  const std::size_t last = first + kChunkVectors < vectors ? first + kChunkVectors : vectors;
  float sum[W] = {};
  if (c < C) {
    for (std::size_t v = first + threadIdx.y; v < last; v += kPartialRows) {
      const std::size_t at = vector_start(v, heads, C, stride) + c;
      const float s = rstd[v];
      const auto d = load_packed<W>(dout + at);
      const auto x = load_packed<W>(inp + at);
      for (int i = 0; i < W; ++i) sum[i] += d.get(i) * (x.get(i) * s);
    }
  }
  for (int i = 0; i < W; ++i) shared[threadIdx.y][threadIdx.x * W + i] = sum[i];
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int y = 1; y < kPartialRows; ++y) {
      for (int i = 0; i < W; ++i) sum[i] += shared[y][threadIdx.x * W + i];
    }
    for (int i = 0; i < W; ++i) partial[std::size_t{blockIdx.y} * C + c + i] = sum[i];
  }
}

// Block (32 channels, kPartialRows): thread (x, y) sums chunks y, y + 8, ... in order, then
// y = 0 adds the 8 sums in order and accumulates into dweight.
template <typename F>
__global__ void rmsnorm_weight_kernel(F* dweight, const float* partial, unsigned chunks, int C) {
  __shared__ float shared[kPartialRows][kWarp];
  const int c = static_cast<int>(blockIdx.x) * kWarp + static_cast<int>(threadIdx.x);
  float sum = 0.0f;
  if (c < C) {
    for (unsigned chunk = threadIdx.y; chunk < chunks; chunk += kPartialRows) {
      sum += partial[std::size_t{chunk} * C + c];
    }
  }
  shared[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int y = 1; y < kPartialRows; ++y) sum += shared[y][threadIdx.x];
    dweight[c] = from_float<F>(to_float(dweight[c]) + sum);
  }
}

void check_shape(std::size_t rows, int heads, int C, std::size_t stride) {
  AT_CHECK(C >= 1 && C <= kRmsNormMaxChannels, "rmsnorm: C = ", C,
           " channels; the CUDA kernels take 1 to ", kRmsNormMaxChannels);
  AT_CHECK(heads >= 1 && (rows <= 1 || stride >= static_cast<std::size_t>(heads) * C),
           "rmsnorm: ", heads, " vectors of C = ", C, " per row do not fit the row stride ",
           stride);
}

// Whether every vector can be read in packs: C and the row stride whole packs, every pointer
// 16-byte aligned (a vector then starts on a 16-byte boundary, offset pointers included).
template <typename F, typename... P>
bool vectors_packable(int C, std::size_t stride, const P*... pointers) {
  return rows_packable<F>(static_cast<std::size_t>(C), pointers...) && stride % kPack<F> == 0;
}

unsigned vector_blocks(std::size_t vectors) {
  return ceil_div(vectors, kWarpsPerBlock);
}

}  // namespace

std::size_t rmsnorm_backward_scratch_floats(std::size_t rows, int heads, int C) {
  return std::size_t{ceil_div(rows * static_cast<std::size_t>(heads), kChunkVectors)} *
         static_cast<std::size_t>(C);
}

template <typename F>
void rmsnorm_forward(F* out, float* rstd, const F* inp, const F* weight, std::size_t rows,
                     int heads, int C, std::size_t stride, float eps, cudaStream_t stream,
                     float weight_offset) {
  check_shape(rows, heads, C, stride);
  const std::size_t vectors = rows * static_cast<std::size_t>(heads);
  if (vectors == 0) return;
  if (vectors_packable<F>(C, stride, out, inp, weight)) {
    rmsnorm_forward_kernel<kPack<F>><<<vector_blocks(vectors), kBlockThreads, 0, stream>>>(
        out, rstd, inp, weight, vectors, heads, C, stride, eps, weight_offset);
  } else {
    rmsnorm_forward_kernel<1><<<vector_blocks(vectors), kBlockThreads, 0, stream>>>(
        out, rstd, inp, weight, vectors, heads, C, stride, eps, weight_offset);
  }
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void rmsnorm_backward(F* dinp, F* dweight, const F* dout, const F* inp, const F* weight,
                      const float* rstd, float* scratch, std::size_t rows, int heads, int C,
                      std::size_t stride, cudaStream_t stream, float weight_offset) {
  check_shape(rows, heads, C, stride);
  const std::size_t vectors = rows * static_cast<std::size_t>(heads);
  if (vectors == 0) return;
  const unsigned chunks = ceil_div(vectors, kChunkVectors);
  const auto channels = static_cast<std::size_t>(C);
  // dweight's partials first: they read dout, which the input gradient may then overwrite.
  if (vectors_packable<F>(C, stride, dout, inp)) {
    constexpr int W = kPack<F>;
    rmsnorm_weight_partials_kernel<W>
        <<<dim3(ceil_div(channels, kWarp * W), chunks), dim3(kWarp, kPartialRows), 0, stream>>>(
            scratch, dout, inp, rstd, vectors, heads, C, stride);
  } else {
    rmsnorm_weight_partials_kernel<1>
        <<<dim3(ceil_div(channels, kWarp), chunks), dim3(kWarp, kPartialRows), 0, stream>>>(
            scratch, dout, inp, rstd, vectors, heads, C, stride);
  }
  AT_CUDA_CHECK_LAUNCH();
  rmsnorm_weight_kernel<<<ceil_div(channels, kWarp), dim3(kWarp, kPartialRows), 0, stream>>>(
      dweight, scratch, chunks, C);
  AT_CUDA_CHECK_LAUNCH();
  if (vectors_packable<F>(C, stride, dinp, dout, inp, weight)) {
    rmsnorm_backward_kernel<kPack<F>><<<vector_blocks(vectors), kBlockThreads, 0, stream>>>(
        dinp, dout, inp, weight, rstd, vectors, heads, C, stride, weight_offset);
  } else {
    rmsnorm_backward_kernel<1><<<vector_blocks(vectors), kBlockThreads, 0, stream>>>(
        dinp, dout, inp, weight, rstd, vectors, heads, C, stride, weight_offset);
  }
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_RMSNORM(F)                                                                           \
  template void rmsnorm_forward<F>(F*, float*, const F*, const F*, std::size_t, int, int,       \
                                   std::size_t, float, cudaStream_t, float);                    \
  template void rmsnorm_backward<F>(F*, F*, const F*, const F*, const F*, const float*, float*, \
                                    std::size_t, int, int, std::size_t, cudaStream_t, float);
AT_GPU_INSTANTIATE(AT_RMSNORM)

}  // namespace autotrain::kernels::gpu
