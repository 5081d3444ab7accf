#pragma once
// Causal self-attention core (the projections are matmuls), in grouped-query form: NH query heads
// share NKV key/value heads (NH % NKV == 0), query head h reading key/value head h / (NH / NKV).
// Llama, Mistral and Qwen use NKV < NH; GPT-2's multi-head attention is NKV = NH. Shapes, with HS
// the head size:
// qkv [B, T, (NH + 2·NKV)·HS], each row NH query heads, then NKV key heads, then NKV value heads;
// out [B, T, NH·HS]; lse [B, NH, T], each row's log-sum-exp of its scores (the softmax's log
// denominator), from which backward recomputes the probabilities: the [T, T] probabilities are
// never stored (memory grows with T, not T²), as in flash attention.
// The overloads taking (C, NH) are GPT-2's layout, qkv [B, T, 3C] with HS = C / NH: the NKV = NH
// case, with identical results.
#include <cmath>

namespace autotrain::kernels {

// Gemma's variations on the plain causal attention (the defaults): the scores' scale
// (query_pre_attn_scalar^-1/2), a soft cap on them (attn_logit_softcapping) and a sliding window.
struct AttentionOptions {
  double scale = 0;    // scores = q·k · scale; 0: 1 / sqrt(HS)
  double softcap = 0;  // > 0: scores = softcap · tanh(scores / softcap) before the softmax
  int window = 0;      // > 0: position t sees t2 only where t - window < t2 <= t
  double scale_for(int HS) const { return scale > 0 ? scale : 1 / std::sqrt(double(HS)); }
  bool plain() const { return scale == 0 && softcap == 0 && window == 0; }
  // The first position that position t sees.
  int first_visible(int t) const { return window > 0 && t >= window ? t - window + 1 : 0; }
};

// out[b, t, h, :] = Σ_{t2 visible from t} softmax_t2(score(q·k)) · v[b, t2, h / (NH / NKV), :]
// (softmax subtracts the row maximum before exponentiating); lse[b, h, t] = max + log Σ exp(s −
// max).
template <typename F>
void attention_forward(F* out, F* lse, const F* qkv, int B, int T, int NH, int NKV, int HS,
                       const AttentionOptions& options = {});

// dqkv [B, T, (NH + 2·NKV)·HS] is overwritten (activation gradient); a key or value head's
// gradient sums over the query heads of its group, in head order. lse from attention_forward on
// the same qkv. scratch [B, NH, T] is working memory (each row's Σ p · dp).
template <typename F>
void attention_backward(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* lse, int B,
                        int T, int NH, int NKV, int HS, const AttentionOptions& options = {});

// The last position only, for generation with a key/value cache: qkv [T, (NH + 2·NKV)·HS] holds
// the rows of one sequence (B = 1) up to and including the query's; out [NH·HS] = attention of
// row T-1's q over the rows it sees. scratch [T] holds one head's probabilities at a time.
template <typename F>
void attention_forward_last(F* out, F* scratch, const F* qkv, int T, int NH, int NKV, int HS,
                            const AttentionOptions& options = {});

template <typename F>
void attention_forward(F* out, F* lse, const F* qkv, int B, int T, int C, int NH) {
  attention_forward(out, lse, qkv, B, T, NH, NH, C / NH);
}

template <typename F>
void attention_backward(F* dqkv, F* scratch, const F* dout, const F* qkv, const F* lse, int B,
                        int T, int C, int NH) {
  attention_backward(dqkv, scratch, dout, qkv, lse, B, T, NH, NH, C / NH);
}

template <typename F>
void attention_forward_last(F* out, F* scratch, const F* qkv, int T, int C, int NH) {
  attention_forward_last(out, scratch, qkv, T, NH, NH, C / NH);
}

}  // namespace autotrain::kernels
