// Encoder (token + position embedding) forward and backward on the device. The backward is
// deterministic: no atomics (the token-embedding rows follow make_token_runs' grouping).
// Invariant (as everywhere in kernels/): parameter gradients accumulate (+=), activation
// gradients are overwritten (=), except on the residual stream.
#include <algorithm>

#include "autotrain/kernels/cuda/encoder.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

// One thread per element of out [B, T, C].
template <typename F>
__global__ void encoder_forward_kernel(F* out, const std::int32_t* inp, const F* wte, const F* wpe,
                                       int T, int C, std::size_t total) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < total;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t bt = i / C;
    const std::size_t c = i % C;
    const std::size_t t = bt % T;
    const std::size_t token = static_cast<std::size_t>(inp[bt]);
    out[i] = from_float<F>(to_float(wte[token * C + c]) + to_float(wpe[t * C + c]));
  }
}

// One thread per element of dwpe [T, C]: sums the batch in order b = 0..B-1 (deterministic).
template <typename F>
__global__ void encoder_dwpe_kernel(F* dwpe, const F* dout, int B, int T, int C) {
  const std::size_t TC = static_cast<std::size_t>(T) * C;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < TC;
       i += std::size_t{gridDim.x} * blockDim.x) {
    float sum = 0.0f;
    for (int b = 0; b < B; ++b) sum += to_float(dout[b * TC + i]);
    dwpe[i] = from_float<F>(to_float(dwpe[i]) + sum);
  }
}

// One block per run (a distinct token), threads across C: the row's positions in order, in fp32,
// added once into dwte. No two blocks share a row.
template <typename F>
__global__ void encoder_dwte_kernel(F* dwte, const F* dout, TokenRuns runs, int C) {
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
    row[c] = from_float<F>(to_float(row[c]) + sum);
  }
}

}  // namespace

template <typename F>
void encoder_forward(F* out, const std::int32_t* inp, const F* wte, const F* wpe, int B, int T,
                     int C, cudaStream_t stream) {
  const std::size_t total = static_cast<std::size_t>(B) * T * C;
  encoder_forward_kernel<<<grid_for(total), kBlockThreads, 0, stream>>>(out, inp, wte, wpe, T, C,
                                                                        total);
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
                      cudaStream_t stream) {
  encoder_dwpe_kernel<<<grid_for(static_cast<std::size_t>(T) * C), kBlockThreads, 0, stream>>>(
      dwpe, dout, B, T, C);
  AT_CUDA_CHECK_LAUNCH();
  if (runs.runs == 0) return;
  encoder_dwte_kernel<<<static_cast<unsigned>(runs.runs), kBlockThreads, 0, stream>>>(dwte, dout,
                                                                                      runs, C);
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_ENCODER(F)                                                                          \
  template void encoder_forward<F>(F*, const std::int32_t*, const F*, const F*, int, int, int, \
                                   cudaStream_t);                                              \
  template void encoder_backward<F>(F*, F*, const F*, const TokenRuns&, int, int, int,         \
                                    cudaStream_t);
AT_GPU_INSTANTIATE(AT_ENCODER)

}  // namespace autotrain::kernels::gpu
