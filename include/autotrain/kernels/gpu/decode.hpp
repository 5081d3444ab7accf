#pragma once
// CUDA kernels of one decoding step (batch 1, one new row) that read the new row's position from
// device memory instead of taking it as an argument, so that the step's launches are the same at
// every position and one CUDA graph, captured once, replays them (model/gpu/decoder_base.hpp).
// `position` points at one int32 on the device: t, the new row's position; the cache holds rows
// 0..t once the step stored row t.
// decode_attention is flash-decoding: the keys 0..t are split into chunks of kDecodeChunk, one
// block per (chunk, query head) scores its chunk and sums its values in fp32 (a partial output
// relative to the chunk's maximum, with the chunk's Σ exp), and a second kernel merges a head's
// chunks in order (deterministic). Blocks of chunks past t return at once, so the grid, sized for
// the cache's capacity, does not change with t.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>
#include <cstdint>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/attention.hpp"  // AttentionOptions

namespace autotrain::kernels::gpu {

// Keys a decode_attention block scores.
inline constexpr int kDecodeChunk = 64;

// out[C] = (wte[tokens[t], :] + wpe[t, :]) · scale; without wpe (nullptr) wte's row alone, times
// scale. The arithmetic of encoder_forward's, so the row is the same bits.
template <typename F>
void decode_embed(F* out, const std::int32_t* tokens, const std::int32_t* position, const F* wte,
                  const F* wpe, int C, float scale, cudaStream_t stream);

// rows[t, :] = row[0..n) (rows [capacity, n]).
template <typename F>
void decode_store_row(F* rows, const F* row, std::size_t n, const std::int32_t* position,
                      cudaStream_t stream);

// fp32 scratch decode_attention needs for a cache of `capacity` positions.
std::size_t decode_attention_scratch_floats(int capacity, int NH, int HS);

// out[NH·HS]: row t's query heads over the rows of the cache they see (AttentionOptions: scale,
// soft cap, sliding window), rows [capacity, (NH + 2·NKV)·HS] in attention.hpp's qkv layout.
// scratch: decode_attention_scratch_floats(capacity, NH, HS) floats.
template <typename F>
void decode_attention(F* out, float* scratch, const F* rows, const std::int32_t* position,
                      int capacity, int NH, int NKV, int HS, const AttentionOptions& options,
                      cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
