#pragma once
// Causal multi-head self-attention core (the projections are matmuls). Shapes:
// qkv [B, T, 3C] holding q, k, v one after the other, each [B, T, NH, HS] with HS = C / NH;
// att [B, NH, T, T] softmax probabilities (row t uses columns 0..t; columns > t hold 0);
// out [B, T, C].
namespace autotrain::kernels {

// out[b, t, h, :] = Σ_{t2 <= t} softmax_t2(q·k / sqrt(HS)) · v[b, t2, h, :]
// (softmax subtracts the row maximum before exponentiating).
template <typename F>
void attention_forward(F* out, F* att, const F* qkv, int B, int T, int C, int NH);

// dqkv [B, T, 3C] is overwritten (activation gradient). scratch [B, NH, T, T] is working memory
// (the gradient of the scores).
template <typename F>
void attention_backward(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* att, int B,
                        int T, int C, int NH);

// The last position only, for generation with a key/value cache: qkv [T, 3C] holds the rows of
// one sequence (B = 1) up to and including the query's; out [C] = attention of row T-1's q over
// rows 0..T-1. scratch [T] holds one head's probabilities at a time.
template <typename F>
void attention_forward_last(F* out, F* scratch, const F* qkv, int T, int C, int NH);

}  // namespace autotrain::kernels
