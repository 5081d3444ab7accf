#pragma once
// CUDA causal multi-head self-attention core (mirrors kernels/attention.hpp). Shapes:
// qkv [B, T, 3C] holding q, k, v, each [B, T, NH, HS] with HS = C / NH; att [B, NH, T, T] softmax
// probabilities (row t uses columns 0..t, the rest are written as 0); out [B, T, C].
#ifdef AUTOTRAIN_HAVE_CUDA
#include "autotrain/kernels/cuda/device.hpp"

namespace autotrain::kernels::gpu {

// Largest head size the kernels accept (q is staged in shared memory).
inline constexpr int kMaxAttentionHeadSize = 256;

template <typename F>
void attention_forward(F* out, F* att, const F* qkv, int B, int T, int C, int NH,
                       cudaStream_t stream);

// dqkv [B, T, 3C] is overwritten. scratch [B, NH, T, T] receives d(pre-softmax scores) (rows
// t2 <= t only; the rest is left as it was): every row at once, without atomics.
template <typename F>
void attention_backward(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att, int B,
                        int T, int C, int NH, cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
