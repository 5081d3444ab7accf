#pragma once
// Flash attention on the device (FlashAttention-2's scheme): the causal grouped-query attention of
// attention.hpp without the [B, NH, T, T] matrices in global memory. Scores and probabilities
// live in registers and go through the tensor cores (mma.sync m16n8k16, fp32 accumulation); the
// backward recomputes them from q, k and the forward's log-sum-exp. AttentionOptions as
// attention.hpp's: Gemma's query scale, soft cap and sliding window (key tiles wholly outside
// every row's window are skipped, not masked).
// bf16 and fp16 only, head sizes 16, 32, 48, 64 (GPT-2's), 96 (Phi-3-mini's), 128 (Llama's,
// Mistral's, Qwen's) and 256 (Gemma's): see flash_attention_supports. Shapes as attention.hpp's:
// qkv [B, T, (NH + 2·NKV)·HS] (NH query heads, then NKV key heads, then NKV value heads; query
// head h reads key/value head h / (NH / NKV)), out and dout [B, T, NH·HS]. The overloads taking
// (C, NH) are GPT-2's layout, qkv [B, T, 3C]: the NKV = NH case with HS = C / NH, with identical
// results.
#ifdef AUTOTRAIN_HAVE_CUDA
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/attention.hpp"  // AttentionOptions

namespace autotrain::kernels::gpu {

// Whether the flash kernels take this element type (sizeof 2), these heads and head size.
bool flash_attention_supports(std::size_t element_bytes, int NH, int NKV, int HS);
bool flash_attention_supports(std::size_t element_bytes, int C, int NH);

// out [B, T, NH·HS] overwritten; lse [B, NH, T] fp32: log Σ_{t2 seen from t} exp(score(q_t·k_t2))
// per row, the score scaled and capped as `options` say.
template <typename F>
void flash_attention_forward(F* out, float* lse, const F* qkv, int B, int T, int NH, int NKV,
                             int HS, cudaStream_t stream, const AttentionOptions& options = {});
template <typename F>
void flash_attention_forward(F* out, float* lse, const F* qkv, int B, int T, int C, int NH,
                             cudaStream_t stream);

// dqkv [B, T, (NH + 2·NKV)·HS] overwritten; a key or value head's gradient sums its group's query
// heads in head order, inside one thread block (no atomics: a run repeats bit for bit). out and
// lse are the forward's (with the same options); delta [B, NH, T] fp32 is scratch (Σ_i dout·out
// per row).
template <typename F>
void flash_attention_backward(F* dqkv, float* delta, const F* dout, const F* qkv, const F* out,
                              const float* lse, int B, int T, int NH, int NKV, int HS,
                              cudaStream_t stream, const AttentionOptions& options = {});
template <typename F>
void flash_attention_backward(F* dqkv, float* delta, const F* dout, const F* qkv, const F* out,
                              const float* lse, int B, int T, int C, int NH, cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
