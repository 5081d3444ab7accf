// Encoder (token + position embedding) forward and backward on the device. The backward is
// deterministic: no atomics (the token-embedding rows follow make_token_runs' grouping).
// Invariant (as everywhere in kernels/): parameter gradients accumulate (+=), activation
// gradients are overwritten (=), except on the residual stream.
#include <algorithm>

#include "autotrain/kernels/gpu/encoder.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

// One thread per pack of W elements of out [B, T, C] (W = kPack<F>: 16-byte accesses, when C and
// the pointers allow; else 1). packs = B·T·C / W; a pack never straddles two rows.
template <int W, typename F>
__global__ void encoder_forward_kernel(F* out, const std::int32_t* inp, const F* wte, const F* wpe,
                                       int T, int C, std::size_t packs, float scale) {
  const std::size_t row_packs = static_cast<std::size_t>(C / W);
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < packs;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t bt = i / row_packs;
    const std::size_t c = (i - bt * row_packs) * W;
    const std::size_t t = bt % T;
    const std::size_t token = static_cast<std::size_t>(inp[bt]);
    const auto a = load_packed<W>(wte + token * C + c);
    const auto b = load_packed<W>(wpe + t * C + c);
    Packed<F, W> sum;
    for (int k = 0; k < W; ++k) sum.set(k, (a.get(k) + b.get(k)) * scale);
    store_packed(out + i * W, sum);
  }
}

// One thread per pack of W elements of dwpe [T, C] (packs = T·C / W): sums the batch in order
// b = 0..B-1 (deterministic).
template <int W, typename F>
__global__ void encoder_dwpe_kernel(F* dwpe, const F* dout, int B, std::size_t packs) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < packs;
       i += std::size_t{gridDim.x} * blockDim.x) {
    float sum[W] = {};
    for (int b = 0; b < B; ++b) {
      const auto d = load_packed<W>(dout + (b * packs + i) * W);
      for (int k = 0; k < W; ++k) sum[k] += d.get(k);
    }
    auto grad = load_packed<W>(dwpe + i * W);
    for (int k = 0; k < W; ++k) grad.set(k, grad.get(k) + sum[k]);
    store_packed(dwpe + i * W, grad);
  }
}

// One block per run (a distinct token), threads across C: the row's positions in order, in fp32,
// added once into dwte. No two blocks share a row.
template <typename F>
__global__ void encoder_dwte_kernel(F* dwte, const F* dout, TokenRuns runs, int C, float scale) {
  const int run = static_cast<int>(blockIdx.x);
  const std::size_t token = static_cast<std::size_t>(runs.tokens[run]);
  const int first = runs.starts[run];
  const int end = runs.starts[run + 1];
  for (int c = static_cast<int>(threadIdx.x); c < C; c += static_cast<int>(blockDim.x)) {
    float sum = 0.0f;
    for (int i = first; i < end; ++i) {
      sum += to_float(dout[static_cast<std::size_t>(runs.positions[i]) * C + c]);
    }
    F* row = dwte + token * C;
    row[c] = from_float<F>(to_float(row[c]) + sum * scale);
  }
}

}  // namespace

template <typename F>
void encoder_forward(F* out, const std::int32_t* inp, const F* wte, const F* wpe, int B, int T,
                     int C, cudaStream_t stream, float scale) {
  const std::size_t total = static_cast<std::size_t>(B) * T * C;
  if (total == 0) return;
  if (rows_packable<F>(static_cast<std::size_t>(C), out, wte, wpe)) {
    constexpr int W = kPack<F>;
    encoder_forward_kernel<W><<<grid_for(total / W), kBlockThreads, 0, stream>>>(
        out, inp, wte, wpe, T, C, total / W, scale);
  } else {
    encoder_forward_kernel<1>
        <<<grid_for(total), kBlockThreads, 0, stream>>>(out, inp, wte, wpe, T, C, total, scale);
  }
  AT_CUDA_CHECK_LAUNCH();
}

int make_token_runs(const std::int32_t* ids, std::size_t n, std::int32_t* positions,
                    std::int32_t* starts, std::int32_t* tokens,
                    std::vector<std::uint64_t>& scratch) {
  // (token, position) packed so that one sort orders by token, then by position.
  scratch.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    scratch[i] = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(ids[i])) << 32) | i;
  }
  std::sort(scratch.begin(), scratch.end());
  int runs = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto token = static_cast<std::int32_t>(scratch[i] >> 32);
    if (i == 0 || token != tokens[runs - 1]) {
      starts[runs] = static_cast<std::int32_t>(i);
      tokens[runs++] = token;
    }
    positions[i] = static_cast<std::int32_t>(scratch[i] & 0xffffffffu);
  }
  starts[runs] = static_cast<std::int32_t>(n);
  return runs;
}

template <typename F>
void encoder_backward(F* dwte, F* dwpe, const F* dout, const TokenRuns& runs, int B, int T, int C,
                      cudaStream_t stream, float wte_scale) {
  const std::size_t TC = static_cast<std::size_t>(T) * C;
  if (TC == 0) return;
  if (rows_packable<F>(TC, dwpe, dout)) {
    constexpr int W = kPack<F>;
    encoder_dwpe_kernel<W><<<grid_for(TC / W), kBlockThreads, 0, stream>>>(dwpe, dout, B, TC / W);
  } else {
    encoder_dwpe_kernel<1><<<grid_for(TC), kBlockThreads, 0, stream>>>(dwpe, dout, B, TC);
  }
  AT_CUDA_CHECK_LAUNCH();
  if (runs.runs == 0) return;
  encoder_dwte_kernel<<<static_cast<unsigned>(runs.runs), kBlockThreads, 0, stream>>>(
      dwte, dout, runs, C, wte_scale);
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_ENCODER(F)                                                                          \
  template void encoder_forward<F>(F*, const std::int32_t*, const F*, const F*, int, int, int, \
                                   cudaStream_t, float);                                       \
  template void encoder_backward<F>(F*, F*, const F*, const TokenRuns&, int, int, int,         \
                                    cudaStream_t, float);
AT_GPU_INSTANTIATE(AT_ENCODER)

}  // namespace autotrain::kernels::gpu
