#pragma once
// CUDA causal self-attention core (mirrors kernels/attention.hpp), in grouped-query form: NH query
// heads share NKV key/value heads (NH % NKV == 0), query head h reading key/value head
// h / (NH / NKV). Llama, Mistral and Qwen use NKV < NH; GPT-2's multi-head attention is NKV = NH.
// Shapes, with HS the head size:
// qkv [B, T, (NH + 2·NKV)·HS], each row NH query heads, then NKV key heads, then NKV value heads;
// att [B, NH, T, T] softmax probabilities (row t uses columns 0..t, the rest are written as 0);
// out [B, T, NH·HS].
// The overloads taking (C, NH) are GPT-2's layout, qkv [B, T, 3C] with HS = C / NH: the NKV = NH
// case, with identical results.
//
// Two implementations with the same contract:
// - fast (the default): per batch row b, cuBLAS strided-batched gemms over the heads on tensor
//   cores (fp32 accumulation) and one fused causal softmax kernel. Scores and d(scores) pass
//   through att / scratch in the element type F. With NKV < NH the products that read a key or
//   value head run once per position in the group, each batched over the NKV groups.
// - reference: one warp per (b, h, t) row, fp32 dot products from global memory. Slow; kept to
//   check the fast path against and as a fallback.
// attention_forward / attention_backward pick the path once per process from the environment:
// AUTOTRAIN_CUDA_ATTENTION=reference selects the reference, unset, empty, "fast", "flash" or
// "cudnn" the fast one (the fused paths are the device model's choice, see attention_kind); any
// other value throws Error. The fast path creates one cuBLAS handle per (thread, device) on
// its first call there; later calls allocate nothing.
#ifdef AUTOTRAIN_HAVE_CUDA
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/attention.hpp"         // AttentionOptions
#include "autotrain/kernels/attention_choice.hpp"  // AttentionKind

namespace autotrain::kernels::gpu {

// Largest head size the kernels accept (the reference stages q in shared memory).
inline constexpr int kMaxAttentionHeadSize = 256;

// out[b, t, h, :] = Σ_{t2 <= t} softmax_t2(q·k / sqrt(HS)) · v[b, t2, h / (NH / NKV), :].
// Options that are not plain (Gemma's query scale, soft cap, a sliding window) run the reference
// path, which alone takes them.
template <typename F>
void attention_forward(F* out, F* att, const F* qkv, int B, int T, int NH, int NKV, int HS,
                       cudaStream_t stream, const AttentionOptions& options = {});

// dqkv [B, T, (NH + 2·NKV)·HS] is overwritten; a key or value head's gradient sums over the
// query heads of its group, in head order (no atomics). scratch [B, NH, T, T] receives
// d(pre-softmax scores) for t2 <= t (every row at once, without atomics); above the diagonal the
// fast path writes 0 and the reference leaves it as it was.
template <typename F>
void attention_backward(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att, int B,
                        int T, int NH, int NKV, int HS, cudaStream_t stream,
                        const AttentionOptions& options = {});

// GPT-2's layout (NKV = NH, HS = C / NH).
template <typename F>
void attention_forward(F* out, F* att, const F* qkv, int B, int T, int C, int NH,
                       cudaStream_t stream);
template <typename F>
void attention_backward(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att, int B,
                        int T, int C, int NH, cudaStream_t stream);

// The path AUTOTRAIN_CUDA_ATTENTION selects (read on the first call, then fixed for the
// process; kernels/attention_choice.hpp parses it): automatic (unset, empty or "auto": cuDNN's
// fused attention where its plans build, else flash attention where it applies, else the fast
// path), cudnn, flash, fast or reference. The device model runs the fused paths itself
// (cudnn_attention.hpp, flash_attention.hpp; kernels::choose_attention picks, and one log line
// says which and why); attention_forward/backward run the fast or the reference path.
using kernels::AttentionKind;
AttentionKind attention_kind();
// attention_kind() == AttentionKind::reference.
bool attention_uses_reference();

// Creates the calling thread's cuBLAS handle and workspace for the current device, which the
// fast path otherwise creates on its first call: the device model calls it at construction, so
// that training allocates no device memory after the first step starts.
void attention_prepare(cudaStream_t stream);

// The tensor-core path, whatever the environment says. With NKV < NH the backward sums a key or
// value head's group in fp32 from per-query-head products rounded to F, which it stages in the
// query columns of dqkv before dq overwrites them (no extra memory).
template <typename F>
void attention_forward_fast(F* out, F* att, const F* qkv, int B, int T, int NH, int NKV, int HS,
                            cudaStream_t stream);
template <typename F>
void attention_backward_fast(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att, int B,
                             int T, int NH, int NKV, int HS, cudaStream_t stream);
template <typename F>
void attention_forward_fast(F* out, F* att, const F* qkv, int B, int T, int C, int NH,
                            cudaStream_t stream);
template <typename F>
void attention_backward_fast(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att, int B,
                             int T, int C, int NH, cudaStream_t stream);

// The slow reference path, whatever the environment says.
template <typename F>
void attention_forward_reference(F* out, F* att, const F* qkv, int B, int T, int NH, int NKV,
                                 int HS, cudaStream_t stream, const AttentionOptions& options = {});
template <typename F>
void attention_backward_reference(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att,
                                  int B, int T, int NH, int NKV, int HS, cudaStream_t stream,
                                  const AttentionOptions& options = {});
template <typename F>
void attention_forward_reference(F* out, F* att, const F* qkv, int B, int T, int C, int NH,
                                 cudaStream_t stream);
template <typename F>
void attention_backward_reference(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att,
                                  int B, int T, int C, int NH, cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
