#pragma once
// Flash attention on the device (FlashAttention-2's scheme): the causal attention of
// attention.hpp without the [B, NH, T, T] matrices in global memory. Scores and probabilities
// live in registers and go through the tensor cores (mma.sync m16n8k16, fp32 accumulation); the
// backward recomputes them from q, k and the forward's log-sum-exp.
// bf16 and fp16 only, head sizes that are multiples of 16 up to 64 (GPT-2's is 64): see
// flash_attention_supports. Opt-in until measured on a GPU: AUTOTRAIN_CUDA_ATTENTION=flash
// (docs/gpu.md). Shapes: qkv [B, T, 3C] (q | k | v, each [NH, HS]), out and dout [B, T, C].
#ifdef AUTOTRAIN_HAVE_CUDA
#include "autotrain/core/gpu/device.hpp"

namespace autotrain::kernels::gpu {

// Whether the flash kernels take this element type (sizeof 2) and head size.
bool flash_attention_supports(std::size_t element_bytes, int C, int NH);

// out [B, T, C] overwritten; lse [B, NH, T] fp32: log Σ_{t2 <= t} exp(scale·q_t·k_t2) per row.
template <typename F>
void flash_attention_forward(F* out, float* lse, const F* qkv, int B, int T, int C, int NH,
                             cudaStream_t stream);

// dqkv [B, T, 3C] overwritten. out and lse are the forward's; delta [B, NH, T] fp32 is scratch
// (Σ_i dout·out per row).
template <typename F>
void flash_attention_backward(F* dqkv, float* delta, const F* dout, const F* qkv, const F* out,
                              const float* lse, int B, int T, int C, int NH, cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
