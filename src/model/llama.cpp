// The Llama-style decoder's parts of the CPU models' driver (model/decoder_driver.hpp), in
// training (the Llama family, Phi-3, Gemma 2 and 3):
// pre-RMSNorm blocks, attention with grouped key/value heads and rotary embeddings (Qwen3, Gemma
// 3: q/k RMSNorm per head first; Gemma: a query scale, a soft cap on the scores and sliding-window
// layers), a gated MLP (SwiGLU, or Gemma's GeGLU), Gemma's norms of both branches' outputs, a
// final RMSNorm (the driver runs the head, its soft cap and the loss). Shapes: B batch, T
// positions, C hidden, NH heads, NKV key/value heads, D head_dim, Q = NH·D, KV = NKV·D, QKV = Q +
// 2·KV, I intermediate, L layers, V vocabulary, Vp padded. Generation: llama_generate.cpp.
// Invariants as in gpt2.cpp: nothing is allocated in forward/backward; parameter gradients
// accumulate; activation gradients are overwritten, except the residual stream's, which every
// RMSNorm backward adds into.
#include "autotrain/model/llama.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/crossentropy.hpp"
#include "autotrain/kernels/matmul.hpp"
#include "autotrain/kernels/residual.hpp"
#include "autotrain/kernels/rmsnorm.hpp"
#include "autotrain/kernels/rope.hpp"
#include "autotrain/kernels/swiglu.hpp"
#include "kernel_clock.hpp"
#include "llama_activations.hpp"
#include "llama_offsets.hpp"
#include "rope_frequencies.hpp"

namespace autotrain::model {

using namespace autotrain::kernels;

template <typename F>
BasicLlama<F>::BasicLlama(const ParamLayout& layout, int B, int T, Recompute recompute)
    : BasicDecoderDriver<F>(layout.config(), B, T, recompute, "max_position_embeddings") {
  AT_CHECK(config_.family == Family::llama,
           "internal: BasicLlama needs a layout of a family on the Llama-style decoder");
  offsets_ = std::make_unique<LlamaOffsets>(layout);
  ensure_rope(T);
  const std::size_t bt = static_cast<std::size_t>(B) * T;
  const auto C = std::size_t(config_.n_embd), Q = std::size_t(config_.q_size());
  const auto QKV = std::size_t(config_.qkv_size()), I = std::size_t(config_.mlp_size());
  acts_ = std::make_unique<Activations>(config_, B, T, recompute);
  dresidual_.assign(bt * C, F(0));
  dsmall_.assign(bt * std::max(C, Q), F(0));
  norm_discard_.assign(std::size_t(C), F(0));
  dwide_.assign(bt * std::max(2 * I, QKV), F(0));
  dmid_.assign(bt * std::max(I, QKV), F(0));
  if (config_.sandwich_norms) dpost_.assign(bt * C, F(0));
  datt_row_.assign(static_cast<std::size_t>(B) * config_.n_head * T, F(0));
}

template <typename F>
BasicLlama<F>::~BasicLlama() = default;

template <typename F>
void BasicLlama<F>::ensure_rope(int positions) {
  if (positions <= rope_positions_) return;
  rotary_tables(config_, positions, rope_cos_, rope_sin_);
  if (config_.rope_local_theta > 0) {
    rotary_tables(config_, positions, rope_local_cos_, rope_local_sin_, true);
  }
  rope_positions_ = positions;
}

template <typename F>
std::size_t BasicLlama<F>::head_offset() const {
  return offsets_->head;
}

template <typename F>
AttentionOptions BasicLlama<F>::attention_options(int l) const {
  const double scalar = config_.query_pre_attn_scalar;
  return {scalar > 0 ? 1 / std::sqrt(scalar) : 0.0, config_.attn_softcap, config_.window(l)};
}

template <typename F>
std::pair<const F*, const F*> BasicLlama<F>::rope_tables(int l) const {
  if (config_.local_rope(l)) return {rope_local_cos_.data(), rope_local_sin_.data()};
  return {rope_cos_.data(), rope_sin_.data()};
}

template <typename F>
double BasicLlama<F>::norm_offset() const {
  return config_.norm_offset ? 1.0 : 0.0;
}

template <typename F>
F BasicLlama<F>::embed_scale() const {
  // Gemma multiplies by sqrt(hidden_size) in the model's dtype.
  return config_.embed_scale ? static_cast<F>(std::sqrt(double(config_.n_embd))) : F(1);
}

template <typename F>
void BasicLlama<F>::embed(F* out, const std::int32_t* tokens, std::size_t n, const F* table) const {
  const auto C = std::size_t(config_.n_embd);
  const F scale = embed_scale();
  for (std::size_t i = 0; i < n; ++i) {
    const F* row = table + std::size_t(tokens[i]) * C;
    for (std::size_t j = 0; j < C; ++j) out[i * C + j] = row[j] * scale;
  }
}

// Block l from its input a.stream(l) to a.stream(l + 1): the training forward, and backward's
// recomputation under activation checkpointing (the same kernels on the same inputs: the same
// bits).
template <typename F>
void BasicLlama<F>::block_forward(Run run, int l, const F* p, BasicLinearAdapter<F>* adapter, int B,
                                  int T, KernelClock& clock) {
  Activations& a = acts(run);
  const ModelConfig& c = config_;
  const int C = c.n_embd, NH = c.n_head, NKV = c.kv_heads(), D = c.head_size(), R = c.rotary_size();
  const int Q = c.q_size(), QKV = c.qkv_size(), I = c.mlp_size();
  const auto bt = static_cast<std::size_t>(B) * T;
  const auto uC = std::size_t(C), uQKV = std::size_t(QKV);
  const double eps = c.norm_eps, w0 = norm_offset();
  const LlamaOffsets& o = *offsets_;
  const std::size_t li = a.slot(l), ci = a.cheap(l);
  const F* x = a.stream(l);
  F* ln1 = a.ln1 + ci * bt * uC;
  F* qkv = a.qkv + li * bt * uQKV;
  F* lse = a.lse + li * a.lse_stride;
  F* atty = a.atty + li * bt * a.Q;
  F* mid = a.mid + li * bt * uC;
  F* ln2 = a.ln2 + ci * bt * uC;
  F* gate_up = a.gate_up + li * bt * 2 * a.I;
  F* act = a.act + ci * bt * a.I;
  // y += the adapter's term of the linear at `weight` (LoRA's dropout in training), if any.
  const auto adapt = [&](std::size_t weight, const F* in, F* y, int IC, int OC) {
    if (adapter) adapter->forward(ParamLayout::block_unit(l), weight, in, y, bt, IC, OC);
  };
  // A branch's output projection (`weight`, `bias`) of `in` joins the stream: out = from + y, or
  // with sandwich norms from + rmsnorm(y) (y kept in `kept`, its rstd in `rstd`).
  const auto join = [&](F* out, const F* from, std::size_t weight, std::size_t bias, const F* in,
                        int IC, F* kept, F* rstd, std::size_t norm) {
    F* y = c.sandwich_norms ? kept + li * bt * uC : a.proj;
    linear_forward(y, in, p + weight, tensor_at(p, bias), bt, IC, C);
    adapt(weight, in, y, IC, C);
    clock.lap(kMatmul);
    if (c.sandwich_norms) {
      rmsnorm_forward(a.proj, rstd + li * bt, y, p + norm, bt, 1, C, uC, eps, w0);
      clock.lap(kNorm);
    }
    residual_forward(out, from, a.proj, bt * uC);
    clock.lap(kResidual);
  };
  rmsnorm_forward(ln1, a.rstd1 + ci * bt, x, p + o.ln1w, bt, 1, C, uC, eps, w0);
  clock.lap(kNorm);
  if (c.qk_norm) {
    F* pre = a.qkv_pre + li * bt * uQKV;
    F* rstd = a.qk_rstd + li * bt * a.H;
    linear_forward(pre, ln1, p + o.qkvw, tensor_at(p, o.qkvb), bt, C, QKV);
    adapt(o.qkvw, ln1, pre, C, QKV);
    clock.lap(kMatmul);
    std::memcpy(qkv, pre, bt * uQKV * sizeof(F));  // v passes through
    rmsnorm_forward(qkv, rstd, pre, p + o.qnorm, bt, NH, D, uQKV, eps, w0);
    rmsnorm_forward(qkv + Q, rstd + bt * std::size_t(NH), pre + Q, p + o.knorm, bt, NKV, D, uQKV,
                    eps, w0);
    clock.lap(kNorm);
  } else {
    linear_forward(qkv, ln1, p + o.qkvw, tensor_at(p, o.qkvb), bt, C, QKV);
    adapt(o.qkvw, ln1, qkv, C, QKV);
    clock.lap(kMatmul);
  }
  const auto [cos, sin] = rope_tables(l);
  rope_forward(qkv, cos, sin, B, T, NH, D, R, uQKV, 0);
  rope_forward(qkv + Q, cos, sin, B, T, NKV, D, R, uQKV, 0);
  attention_forward(atty, lse, qkv, B, T, NH, NKV, D, attention_options(l));
  clock.lap(kAttention);
  join(mid, x, o.ow, o.ob, atty, Q, a.attn_out, a.rstd_attn, o.attn_post);
  rmsnorm_forward(ln2, a.rstd2 + ci * bt, mid, p + o.ln2w, bt, 1, C, uC, eps, w0);
  clock.lap(kNorm);
  linear_forward(gate_up, ln2, p + o.guw, tensor_at(p, o.gub), bt, C, 2 * I);
  adapt(o.guw, ln2, gate_up, C, 2 * I);
  clock.lap(kMatmul);
  gated_forward(c.gate, act, gate_up, bt, I);
  clock.lap(kActivation);
  join(a.stream(l + 1), mid, o.downw, o.downb, act, I, a.mlp_out, a.rstd_mlp, o.mlp_post);
}

// Selective recompute: block l's two norms from its kept input and mid, the gated unit from its
// kept gate_up (the adapters' terms are in gate_up already).
template <typename F>
void BasicLlama<F>::block_recompute(int l, const F* p, KernelClock& clock) {
  Activations& a = *acts_;
  const ModelConfig& c = config_;
  const int C = c.n_embd;
  const auto bt = inputs_.size(), uC = std::size_t(C);
  const double eps = c.norm_eps, w0 = norm_offset();
  const std::size_t li = a.slot(l), ci = a.cheap(l);
  rmsnorm_forward(a.ln1 + ci * bt * uC, a.rstd1 + ci * bt, a.stream(l), p + offsets_->ln1w, bt, 1,
                  C, uC, eps, w0);
  rmsnorm_forward(a.ln2 + ci * bt * uC, a.rstd2 + ci * bt, a.mid + li * bt * uC, p + offsets_->ln2w,
                  bt, 1, C, uC, eps, w0);
  clock.lap(kNorm);
  gated_forward(c.gate, a.act + ci * bt * a.I, a.gate_up + li * bt * 2 * a.I, bt, c.mlp_size());
  clock.lap(kActivation);
}

template <typename F>
void BasicLlama<F>::embed_forward(Run run, const F* p, const std::int32_t* tokens, int B, int T) {
  embed(acts(run).residual, tokens, static_cast<std::size_t>(B) * static_cast<std::size_t>(T),
        p + offsets_->embed);
}

template <typename F>
const F* BasicLlama<F>::final_norm_forward(Run run, const F* p, int B, int T) {
  Activations& a = acts(run);
  const int C = config_.n_embd;
  rmsnorm_forward(a.lnf, a.rstdf, a.stream(config_.n_layer), p + offsets_->normw,
                  static_cast<std::size_t>(B) * static_cast<std::size_t>(T), 1, C, std::size_t(C),
                  config_.norm_eps, norm_offset());
  return a.lnf;
}

template <typename F>
void BasicLlama<F>::final_norm_backward(const F* p, F* g) {
  const Activations& a = *acts_;
  const int C = config_.n_embd;
  std::fill(dresidual_.begin(), dresidual_.end(), F(0));
  rmsnorm_backward(dresidual_.data(), g ? g + offsets_->normw : norm_discard_.data(),
                   dsmall_.data(), a.stream(config_.n_layer), p + offsets_->normw, a.rstdf,
                   inputs_.size(), 1, C, std::size_t(C), norm_offset());
}

template <typename F>
void BasicLlama<F>::embed_backward(F* g) {
  const auto uC = std::size_t(config_.n_embd);
  const F scale = embed_scale();
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    F* row = g + offsets_->embed + std::size_t(inputs_[i]) * uC;
    const F* d = dresidual_.data() + i * uC;
    for (std::size_t j = 0; j < uC; ++j) row[j] += d[j] * scale;
  }
}

// One block's backward: dresidual_ holds d(stream out of layer l) and ends holding d(stream
// into it).
template <typename F>
void BasicLlama<F>::block_backward(int l, const F* p, F* g, BasicLinearAdapter<F>* adapter,
                                   KernelClock& clock) {
  const ModelConfig& c = config_;
  const int C = c.n_embd, NH = c.n_head, NKV = c.kv_heads(), D = c.head_size(), R = c.rotary_size();
  const int Q = c.q_size(), QKV = c.qkv_size(), I = c.mlp_size();
  const auto bt = static_cast<std::size_t>(B_) * T_;
  const auto uC = std::size_t(C), uQKV = std::size_t(QKV);
  const double w0 = norm_offset();
  const Activations& a = *acts_;
  const std::size_t li = a.slot(l), ci = a.cheap(l);
  const LlamaOffsets& o = *offsets_;
  F* dres = dresidual_.data();
  F* dsmall = dsmall_.data();
  F* dwide = dwide_.data();
  F* dmid = dmid_.data();
  const int unit = ParamLayout::block_unit(l);
  // dx += the adapter's term of the linear at `weight` (after the linear's own backward).
  const auto adapt = [&](std::size_t weight, const F* in, const F* dy, F* dx, int IC, int OC) {
    if (adapter) adapter->backward(unit, weight, in, dy, dx, bt, IC, OC);
  };
  // d(a branch's projection output) from d(stream) = dres: itself, or through the sandwich norm
  // of the output `kept` (its rstd `rstd`, its weight at `norm`).
  const auto branch_grad = [&](const F* kept, const F* rstd, std::size_t norm) -> const F* {
    if (!c.sandwich_norms) return dres;
    F* dy = dpost_.data();
    std::fill(dy, dy + bt * uC, F(0));
    rmsnorm_backward(dy, g + norm, dres, kept + li * bt * uC, p + norm, rstd + li * bt, bt, 1, C,
                     uC, w0);
    clock.lap(kNorm);
    return dy;
  };
  const F* qkv = a.qkv + li * bt * uQKV;
  const F* ln1 = a.ln1 + ci * bt * uC;
  const F* ln2 = a.ln2 + ci * bt * uC;
  const F* gate_up = a.gate_up + li * bt * 2 * a.I;

  // MLP: out = mid + [norm](down(gate(gate_up(rmsnorm(mid))))), dres = d out
  const F* act = a.act + ci * bt * a.I;
  const F* dy = branch_grad(a.mlp_out, a.rstd_mlp, o.mlp_post);
  linear_backward(dmid, g + o.downw, tensor_at(g, o.downb), dy, act, p + o.downw, bt, I, C);
  adapt(o.downw, act, dy, dmid, I, C);
  clock.lap(kMatmul);
  gated_backward(c.gate, dwide, dmid, gate_up, bt, I);
  clock.lap(kActivation);
  linear_backward(dsmall, g + o.guw, tensor_at(g, o.gub), dwide, ln2, p + o.guw, bt, C, 2 * I);
  adapt(o.guw, ln2, dwide, dsmall, C, 2 * I);
  clock.lap(kMatmul);
  rmsnorm_backward(dres, g + o.ln2w, dsmall, a.mid + li * bt * uC, p + o.ln2w, a.rstd2 + ci * bt,
                   bt, 1, C, uC, w0);
  clock.lap(kNorm);
  // Attention: mid = x + [norm](o_proj(attention(rope(norm_qk(qkv(rmsnorm(x))))))), dres = d mid
  const F* atty = a.atty + li * bt * a.Q;
  dy = branch_grad(a.attn_out, a.rstd_attn, o.attn_post);
  linear_backward(dsmall, g + o.ow, tensor_at(g, o.ob), dy, atty, p + o.ow, bt, Q, C);
  adapt(o.ow, atty, dy, dsmall, Q, C);
  clock.lap(kMatmul);
  attention_backward(dwide, datt_row_.data(), dsmall, qkv, a.lse + li * a.lse_stride, B_, T_, NH,
                     NKV, D, attention_options(l));
  const auto [cos, sin] = rope_tables(l);
  rope_backward(dwide, cos, sin, B_, T_, NH, D, R, uQKV, 0);
  rope_backward(dwide + Q, cos, sin, B_, T_, NKV, D, R, uQKV, 0);
  clock.lap(kAttention);
  const F* dqkv = dwide;
  if (c.qk_norm) {
    const F* pre = a.qkv_pre + li * bt * uQKV;
    const F* rstd = a.qk_rstd + li * bt * a.H;
    const auto KV = std::size_t(c.kv_size());
    std::fill(dmid, dmid + bt * uQKV, F(0));  // the norms' backward adds into q and k
    for (std::size_t r = 0; r < bt; ++r) {    // v passed through unchanged
      std::memcpy(dmid + r * uQKV + Q + KV, dwide + r * uQKV + Q + KV, KV * sizeof(F));
    }
    rmsnorm_backward(dmid, g + o.qnorm, dwide, pre, p + o.qnorm, rstd, bt, NH, D, uQKV, w0);
    rmsnorm_backward(dmid + Q, g + o.knorm, dwide + Q, pre + Q, p + o.knorm,
                     rstd + bt * std::size_t(NH), bt, NKV, D, uQKV, w0);
    clock.lap(kNorm);
    dqkv = dmid;
  }
  linear_backward(dsmall, g + o.qkvw, tensor_at(g, o.qkvb), dqkv, ln1, p + o.qkvw, bt, C, QKV);
  adapt(o.qkvw, ln1, dqkv, dsmall, C, QKV);
  clock.lap(kMatmul);
  rmsnorm_backward(dres, g + o.ln1w, dsmall, a.stream(l), p + o.ln1w, a.rstd1 + ci * bt, bt, 1, C,
                   uC, w0);
  clock.lap(kNorm);
}

template <typename F>
std::size_t BasicLlama<F>::family_activation_bytes() const {
  const std::size_t elements = acts_->storage.size() + dresidual_.size() + dsmall_.size() +
                               dwide_.size() + dmid_.size() + dpost_.size() + datt_row_.size();
  return elements * sizeof(F);
}

template class BasicLlama<float>;
template class BasicLlama<double>;

}  // namespace autotrain::model
