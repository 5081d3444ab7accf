#pragma once
// CUDA token + position embedding (mirrors kernels/encoder.hpp). Shapes: inp [B, T] token ids on
// the device; wte [V, C]; wpe [T, C]; out [B, T, C]. F is float, __nv_bfloat16 or __half.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstdint>
#include <vector>

#include "autotrain/core/gpu/device.hpp"

namespace autotrain::kernels::gpu {

// out[b, t, :] = (wte[inp[b, t], :] + wpe[t, :]) · scale (Gemma scales its embeddings by
// sqrt(C); 1 elsewhere). Ids must be valid rows of wte (the caller checks).
template <typename F>
void encoder_forward(F* out, const std::int32_t* inp, const F* wte, const F* wpe, int B, int T,
                     int C, cudaStream_t stream, float scale = 1);

// The positions of a micro-batch grouped by token, which the dwte gradient walks instead of
// meeting in atomics: built on the host by make_token_runs, then copied to the device.
struct TokenRuns {
  const std::int32_t* positions = nullptr;  // [n] 0..n-1 ordered by token, then by position
  const std::int32_t* starts = nullptr;     // [runs + 1] where each run starts in positions
  const std::int32_t* tokens = nullptr;     // [runs] the token of each run
  int runs = 0;
};

// Host code: fills positions [n], starts [n + 1] and tokens [n] for ids [n]; returns the number
// of runs (distinct tokens). `scratch` is reused between calls (no allocation once sized n).
int make_token_runs(const std::int32_t* ids, std::size_t n, std::int32_t* positions,
                    std::int32_t* starts, std::int32_t* tokens,
                    std::vector<std::uint64_t>& scratch);

// dwte[inp[b, t], :] += dout[b, t, :] · wte_scale (the forward's scale of an embedding without
// positions); dwpe[t, :] += dout[b, t, :]. Deterministic: dwpe sums the
// batch in order b = 0..B-1, and each row of dwte sums its token's positions in order (one block
// per run of `runs`, device pointers), so a run repeats bit for bit.
template <typename F>
void encoder_backward(F* dwte, F* dwpe, const F* dout, const TokenRuns& runs, int B, int T, int C,
                      cudaStream_t stream, float wte_scale = 1);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
