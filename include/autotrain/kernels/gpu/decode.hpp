#pragma once
// CUDA kernels of one decoding step (batch 1) that read the new rows' first position from device
// memory instead of taking it as an argument, so that the step's launches are the same at every
// position and one CUDA graph, captured once, replays them (model/gpu/decoder_base.hpp).
// `position` points at one int32 on the device: t, the first new row's position; a step feeds
// `rows` tokens (one while generating, a chunk of the prompt in a prefill) at positions
// t..t + rows - 1, and the cache holds rows 0..t + rows - 1 once the step stored them. Row i's
// query sees the keys up to its own position t + i (causal within the step too).
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
// The most rows one step feeds (the grids' y and z dimensions).
inline constexpr int kMaxDecodeRows = 1024;

// out[i, C] = (wte[tokens[t + i], :] + wpe[t + i, :]) · scale for i < rows; without wpe
// (nullptr) wte's row alone, times scale. The arithmetic of encoder_forward's, so the rows are the
// same bits.
template <typename F>
void decode_embed(F* out, const std::int32_t* tokens, const std::int32_t* position, int rows,
                  const F* wte, const F* wpe, int C, float scale, cudaStream_t stream);

// cache[t + i, :] = new_rows[i, 0..n) for i < rows (cache [capacity, n]).
template <typename F>
void decode_store_rows(F* cache, const F* new_rows, int rows, std::size_t n,
                       const std::int32_t* position, cudaStream_t stream);

// fp32 scratch decode_attention needs for `rows` queries over a cache of `capacity` positions.
std::size_t decode_attention_scratch_floats(int capacity, int rows, int NH, int HS);

// out[i, NH·HS]: row t + i's query heads over the rows of the cache they see (AttentionOptions:
// scale, soft cap, sliding window), cache [capacity, (NH + 2·NKV)·HS] in attention.hpp's qkv
// layout. scratch: decode_attention_scratch_floats(capacity, rows, NH, HS) floats.
template <typename F>
void decode_attention(F* out, float* scratch, const F* cache, const std::int32_t* position,
                      int rows, int capacity, int NH, int NKV, int HS,
                      const AttentionOptions& options, cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
