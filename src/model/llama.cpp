// The Llama family's forward and backward: pre-RMSNorm blocks, attention with grouped key/value
// heads and rotary embeddings (Qwen3: q/k RMSNorm per head first), a SwiGLU MLP, a final RMSNorm
// and an LM head (its own, or the embeddings), fused softmax + cross-entropy over the padded
// vocabulary. Shapes: B batch, T positions, C hidden, NH heads, NKV key/value heads, D head_dim,
// Q = NH·D, KV = NKV·D, QKV = Q + 2·KV, I intermediate, L layers, V vocabulary, Vp padded.
// Invariants as in gpt2.cpp: nothing is allocated in forward/backward; parameter gradients
// accumulate; activation gradients are overwritten, except the residual stream's, which every
// RMSNorm backward adds into.
#include "autotrain/model/llama.hpp"

#include <algorithm>
#include <cstring>

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/attention.hpp"
#include "autotrain/kernels/crossentropy.hpp"
#include "autotrain/kernels/matmul.hpp"
#include "autotrain/kernels/residual.hpp"
#include "autotrain/kernels/rmsnorm.hpp"
#include "autotrain/kernels/rope.hpp"
#include "autotrain/kernels/swiglu.hpp"
#include "check_tokens.hpp"
#include "kernel_clock.hpp"
#include "llama_offsets.hpp"
#include "rope_frequencies.hpp"

namespace autotrain::model {

using namespace autotrain::kernels;

// Activations kept for backward, carved from one allocation; per-layer tensors are [L, ...] with
// strides of the capacity (B, T), and a shorter sequence uses the front of each slot. With
// `one_slot` (activation checkpointing, and inference) only the stream keeps a slot per layer;
// every other per-layer tensor has one slot that every block overwrites (slot(l) = 0), and
// backward recomputes a block's into it.
template <typename F>
struct BasicLlama<F>::Activations {
  std::vector<F> storage;
  std::size_t bt = 0, att_stride = 0;
  std::size_t C = 0, QKV = 0, Q = 0, I = 0, H = 0;  // H: q/k heads normalised per row (qk_norm)
  F* residual;      // [L + 1, BT, C]: the stream into each layer, then the last one's output
  F *ln1, *rstd1;   // [L, BT, C], [L, BT]
  F* qkv_pre;       // [L, BT, QKV] before the q/k norm (qk_norm only)
  F* qk_rstd;       // [L, BT, NH + NKV] (qk_norm only)
  F* qkv;           // [L, BT, QKV] attention's input (normed, rotated)
  F* att;           // [L, B, NH, T, T]
  F* atty;          // [L, BT, Q]
  F* mid;           // [L, BT, C] the stream after attention
  F *ln2, *rstd2;   // [L, BT, C], [L, BT]
  F* gate_up;       // [L, BT, 2I]
  F* act;           // [L, BT, I]
  F *lnf, *rstdf;   // [BT, C], [BT]
  F* proj;          // [BT, C] o_proj / down_proj output before the residual add
  F* logits;        // [logits_rows, Vp]; dlogits after backward starts
  F *lse, *losses;  // [BT]

  bool one_slot = false;

  Activations(const ModelConfig& c, int B, int T, std::size_t logits_rows, bool one_slot_)
      : one_slot(one_slot_) {
    const auto layers = static_cast<std::size_t>(c.n_layer);
    const std::size_t L = one_slot ? 1 : layers;  // slots of the recomputable tensors
    bt = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
    C = std::size_t(c.n_embd), QKV = std::size_t(c.qkv_size()), Q = std::size_t(c.q_size());
    I = std::size_t(c.mlp_size());
    H = c.qk_norm ? std::size_t(c.n_head + c.kv_heads()) : 0;
    att_stride = static_cast<std::size_t>(B) * c.n_head * static_cast<std::size_t>(T) * T;
    std::vector<std::pair<F**, std::size_t>> parts = {
        {&residual, (layers + 1) * bt * C},
        {&ln1, L * bt * C},
        {&rstd1, L * bt},
        {&qkv_pre, c.qk_norm ? L * bt * QKV : 0},
        {&qk_rstd, L * bt * H},
        {&qkv, L * bt * QKV},
        {&att, L * att_stride},
        {&atty, L * bt * Q},
        {&mid, L * bt * C},
        {&ln2, L * bt * C},
        {&rstd2, L * bt},
        {&gate_up, L * bt * 2 * I},
        {&act, L * bt * I},
        {&lnf, bt * C},
        {&rstdf, bt},
        {&proj, bt * C},
        {&logits, logits_rows * static_cast<std::size_t>(c.padded_vocab_size)},
        {&lse, bt},
        {&losses, bt}};
    std::size_t total = 0;
    for (const auto& part : parts) total += part.second;
    storage.assign(total, F(0));
    F* next = storage.data();
    for (const auto& part : parts) {
      *part.first = next;
      next += part.second;
    }
  }
  F* stream(int l) const { return residual + std::size_t(l) * bt * C; }
  // The slot of layer l's recomputable tensors.
  std::size_t slot(int l) const { return one_slot ? 0 : std::size_t(l); }
};

// The key/value cache of incremental generation: every layer's attention input rows (q|k|v,
// normed and rotated) of the positions fed so far, and one position of everything else.
template <typename F>
struct BasicLlama<F>::Cache {
  std::vector<F> qkv;  // [L, capacity, QKV]
  std::vector<F> x, ln, pre, atty, proj, mid, gate_up, act, logits, scratch, stats;
  int capacity = 0;
  int length = 0;

  explicit Cache(const ModelConfig& c) : capacity(c.generation_context()) {
    const auto QKV = std::size_t(c.qkv_size()), C = std::size_t(c.n_embd);
    const auto I = std::size_t(c.mlp_size());
    qkv.assign(std::size_t(c.n_layer) * std::size_t(capacity) * QKV, F(0));
    for (auto* v : {&x, &ln, &proj, &mid}) v->assign(C, F(0));
    pre.assign(QKV, F(0));
    atty.assign(std::size_t(c.q_size()), F(0));
    gate_up.assign(2 * I, F(0));
    act.assign(I, F(0));
    logits.assign(std::size_t(c.padded_vocab_size), F(0));
    scratch.assign(std::size_t(capacity), F(0));
    stats.assign(std::size_t(c.n_head + c.kv_heads()), F(0));
  }
};

template <typename F>
BasicLlama<F>::BasicLlama(const ParamLayout& layout, int B, int T, bool recompute)
    : config_(layout.config()), B_(B), T_(T), recompute_(recompute) {
  AT_CHECK(config_.family == Family::llama,
           "internal: BasicLlama needs a layout of a family on the Llama-style decoder");
  AT_CHECK(B >= 1, "model: batch_size must be >= 1, got ", B);
  AT_CHECK(T >= 1 && T <= config_.block_size, "model: sequence length ", T,
           " must be in [1, max_position_embeddings = ", config_.block_size, "]");
  AT_CHECK(config_.sliding_window == 0 || T <= config_.sliding_window, "model: sequence length ", T,
           " exceeds the model's sliding_window of ", config_.sliding_window,
           ": attention over a sliding window is not supported yet; use block_size <= ",
           config_.sliding_window);
  offsets_ = std::make_unique<LlamaOffsets>(layout);
  ensure_rope(T);
  const std::size_t bt = static_cast<std::size_t>(B) * T;
  const auto C = std::size_t(config_.n_embd), Q = std::size_t(config_.q_size());
  const auto QKV = std::size_t(config_.qkv_size()), I = std::size_t(config_.mlp_size());
  acts_ = std::make_unique<Activations>(config_, B, T, bt, recompute);
  inputs_.assign(bt, 0);
  targets_.assign(bt, 0);
  dresidual_.assign(bt * C, F(0));
  dsmall_.assign(bt * std::max(C, Q), F(0));
  norm_discard_.assign(std::size_t(C), F(0));
  dwide_.assign(bt * std::max(2 * I, QKV), F(0));
  dmid_.assign(bt * std::max(I, QKV), F(0));
  datt_row_.assign(static_cast<std::size_t>(B) * config_.n_head * T * T, F(0));
}

template <typename F>
BasicLlama<F>::~BasicLlama() = default;

template <typename F>
void BasicLlama<F>::ensure_rope(int positions) {
  if (positions <= rope_positions_) return;
  rotary_tables(config_, positions, rope_cos_, rope_sin_);
  rope_positions_ = positions;
}

template <typename F>
int BasicLlama<F>::head_unit() const {
  return config_.tie_word_embeddings ? 0 : config_.n_layer + 1;
}

// Block l from its input a.stream(l) to a.stream(l + 1): the training forward, and backward's
// recomputation under activation checkpointing (the same kernels on the same inputs: the same
// bits).
template <typename F>
void BasicLlama<F>::block_forward(Activations& a, int l, const F* p, BasicLinearAdapter<F>* adapter,
                                  int B, int T, KernelClock& clock) {
  const ModelConfig& c = config_;
  const int C = c.n_embd, NH = c.n_head, NKV = c.kv_heads(), D = c.head_size(), R = c.rotary_size();
  const int Q = c.q_size(), QKV = c.qkv_size(), I = c.mlp_size();
  const auto bt = static_cast<std::size_t>(B) * T;
  const auto uC = std::size_t(C), uQKV = std::size_t(QKV);
  const double eps = c.norm_eps;
  const LlamaOffsets& o = *offsets_;
  const std::size_t li = a.slot(l);
  const F* x = a.stream(l);
  F* ln1 = a.ln1 + li * bt * uC;
  F* qkv = a.qkv + li * bt * uQKV;
  F* att = a.att + li * a.att_stride;
  F* atty = a.atty + li * bt * a.Q;
  F* mid = a.mid + li * bt * uC;
  F* ln2 = a.ln2 + li * bt * uC;
  F* gate_up = a.gate_up + li * bt * 2 * a.I;
  F* act = a.act + li * bt * a.I;
  // y += the adapter's term of the linear at `weight` (LoRA's dropout in training), if any.
  const auto adapt = [&](std::size_t weight, const F* in, F* y, int IC, int OC) {
    if (adapter) adapter->forward(ParamLayout::block_unit(l), weight, in, y, bt, IC, OC);
  };
  rmsnorm_forward(ln1, a.rstd1 + li * bt, x, p + o.ln1w, bt, 1, C, uC, eps);
  clock.lap(kNorm);
  if (c.qk_norm) {
    F* pre = a.qkv_pre + li * bt * uQKV;
    F* rstd = a.qk_rstd + li * bt * a.H;
    linear_forward(pre, ln1, p + o.qkvw, tensor_at(p, o.qkvb), bt, C, QKV);
    adapt(o.qkvw, ln1, pre, C, QKV);
    clock.lap(kMatmul);
    std::memcpy(qkv, pre, bt * uQKV * sizeof(F));  // v passes through
    rmsnorm_forward(qkv, rstd, pre, p + o.qnorm, bt, NH, D, uQKV, eps);
    rmsnorm_forward(qkv + Q, rstd + bt * std::size_t(NH), pre + Q, p + o.knorm, bt, NKV, D, uQKV,
                    eps);
    clock.lap(kNorm);
  } else {
    linear_forward(qkv, ln1, p + o.qkvw, tensor_at(p, o.qkvb), bt, C, QKV);
    adapt(o.qkvw, ln1, qkv, C, QKV);
    clock.lap(kMatmul);
  }
  rope_forward(qkv, rope_cos_.data(), rope_sin_.data(), B, T, NH, D, R, uQKV, 0);
  rope_forward(qkv + Q, rope_cos_.data(), rope_sin_.data(), B, T, NKV, D, R, uQKV, 0);
  attention_forward(atty, att, qkv, B, T, NH, NKV, D);
  clock.lap(kAttention);
  linear_forward(a.proj, atty, p + o.ow, tensor_at(p, o.ob), bt, Q, C);
  adapt(o.ow, atty, a.proj, Q, C);
  clock.lap(kMatmul);
  residual_forward(mid, x, a.proj, bt * uC);
  clock.lap(kResidual);
  rmsnorm_forward(ln2, a.rstd2 + li * bt, mid, p + o.ln2w, bt, 1, C, uC, eps);
  clock.lap(kNorm);
  linear_forward(gate_up, ln2, p + o.guw, tensor_at(p, o.gub), bt, C, 2 * I);
  adapt(o.guw, ln2, gate_up, C, 2 * I);
  clock.lap(kMatmul);
  swiglu_forward(act, gate_up, bt, I);
  clock.lap(kActivation);
  linear_forward(a.proj, act, p + o.downw, tensor_at(p, o.downb), bt, I, C);
  adapt(o.downw, act, a.proj, I, C);
  clock.lap(kMatmul);
  residual_forward(a.stream(l + 1), mid, a.proj, bt * uC);
  clock.lap(kResidual);
}

template <typename F>
const F* BasicLlama<F>::forward_to_final_norm(BasicUnitAccess<F>& access, Activations& a,
                                              const std::int32_t* inputs, int B, int T) {
  const ModelConfig& c = config_;
  const int C = c.n_embd, L = c.n_layer;
  const auto bt = static_cast<std::size_t>(B) * T;
  const auto uC = std::size_t(C);
  const LlamaOffsets& o = *offsets_;
  KernelClock clock(this->profiling_, this->profile_, Pass::forward);

  const F* p = access.params(0);
  clock.restart();
  for (std::size_t i = 0; i < bt; ++i) {
    std::memcpy(a.residual + i * uC, p + o.embed + std::size_t(inputs[i]) * uC, uC * sizeof(F));
  }
  clock.lap(kEncoder);
  access.release(0);

  for (int l = 0; l < L; ++l) {
    p = access.params(ParamLayout::block_unit(l));
    clock.restart();
    block_forward(a, l, p, access.linear_adapter(ParamLayout::block_unit(l)), B, T, clock);
    access.release(ParamLayout::block_unit(l));
  }
  const int last = L + 1;
  p = access.params(last);
  clock.restart();
  rmsnorm_forward(a.lnf, a.rstdf, a.stream(L), p + o.normw, bt, 1, C, uC, c.norm_eps);
  clock.lap(kNorm);
  if (head_unit() == last) return p;  // an untied head is read next, from this unit
  access.release(last);
  return access.params(0);  // the tied head
}

template <typename F>
F BasicLlama<F>::forward(BasicUnitAccess<F>& access, const std::int32_t* inputs,
                         const std::int32_t* targets) {
  const std::size_t bt = static_cast<std::size_t>(B_) * T_;
  check_tokens(inputs, bt, config_.vocab_size, "inputs");
  loss_positions_ = check_targets(targets, bt, config_.vocab_size);
  std::copy(inputs, inputs + bt, inputs_.begin());
  std::copy(targets, targets + bt, targets_.begin());
  Activations& a = *acts_;
  const F* p = forward_to_final_norm(access, a, inputs_.data(), B_, T_);
  const int C = config_.n_embd, V = config_.vocab_size, Vp = config_.padded_vocab_size;
  KernelClock clock(this->profiling_, this->profile_, Pass::forward);
  clock.restart();
  // logits[BT, Vp] = lnf[BT, C] · head[Vp, C]ᵀ
  gemm<F>(Transpose::no, Transpose::yes, bt, Vp, C, F(1), a.lnf, C, p + offsets_->head, C, F(0),
          a.logits, Vp);
  clock.lap(kLmHead);
  access.release(head_unit());
  clock.restart();
  crossentropy_forward(a.losses, a.lse, a.logits, targets_.data(), bt, V, Vp);
  clock.lap(kCrossEntropy);
  ready_for_backward_ = true;
  return static_cast<F>(mean_loss(a.losses, bt, loss_positions_));
}

template <typename F>
void BasicLlama<F>::backward(BasicUnitAccess<F>& access, F loss_scale) {
  AT_CHECK(ready_for_backward_, "model: backward() needs a forward() with targets before it");
  ready_for_backward_ = false;
  Activations& a = *acts_;
  const int C = config_.n_embd, L = config_.n_layer;
  const int V = config_.vocab_size, Vp = config_.padded_vocab_size;
  const std::size_t bt = static_cast<std::size_t>(B_) * T_;
  const LlamaOffsets& o = *offsets_;
  KernelClock clock(this->profiling_, this->profile_, Pass::backward);
  const F dloss = position_dloss(loss_scale, loss_positions_);
  crossentropy_backward(a.logits, a.logits, a.lse, targets_.data(), dloss, bt, V, Vp);
  clock.lap(kCrossEntropy);
  const int last = L + 1;
  const auto head_backward = [&](const F* p, F* g) {  // g null: the head is frozen
    clock.restart();
    const SharedBf16Operand dlogits(a.logits, bt * std::size_t(Vp));  // read by both products
    // dhead[Vp, C] += dlogits[BT, Vp]ᵀ · lnf[BT, C];  dlnf[BT, C] = dlogits · head[Vp, C]
    if (g != nullptr) {
      gemm<F>(Transpose::yes, Transpose::no, Vp, C, bt, F(1), a.logits, Vp, a.lnf, C, F(1),
              g + o.head, C);
    }
    gemm<F>(Transpose::no, Transpose::no, bt, C, Vp, F(1), a.logits, Vp, p + o.head, C, F(0),
            dsmall_.data(), C);
    clock.lap(kLmHead);
  };
  if (head_unit() == 0) {
    const F* p = access.params(0);  // before grads(0): the documented order
    head_backward(p, access.frozen(0) ? nullptr : access.grads(0));
    access.release(0);
  }
  {
    const F* p = access.params(last);
    F* g = access.frozen(last) ? nullptr : access.grads(last);
    if (head_unit() == last) head_backward(p, g);
    std::fill(dresidual_.begin(), dresidual_.end(), F(0));
    clock.restart();
    rmsnorm_backward(dresidual_.data(), g ? g + o.normw : norm_discard_.data(), dsmall_.data(),
                     a.stream(L), p + o.normw, a.rstdf, bt, 1, C, std::size_t(C));
    clock.lap(kNorm);
    access.release(last);
    access.grads_ready(last);
  }
  for (int l = L - 1; l >= 0; --l) block_backward(access, l);
  if (!access.frozen(0)) {
    F* g = access.grads(0);
    clock.restart();
    const auto uC = std::size_t(C);
    for (std::size_t i = 0; i < bt; ++i) {
      F* row = g + o.embed + std::size_t(inputs_[i]) * uC;
      const F* d = dresidual_.data() + i * uC;
      for (std::size_t j = 0; j < uC; ++j) row[j] += d[j];
    }
    clock.lap(kEncoder);
  }
  access.grads_ready(0);
}

// One block's backward: dresidual_ holds d(stream out of layer l) and ends holding d(stream
// into it).
template <typename F>
void BasicLlama<F>::block_backward(BasicUnitAccess<F>& access, int l) {
  const ModelConfig& c = config_;
  const int C = c.n_embd, NH = c.n_head, NKV = c.kv_heads(), D = c.head_size(), R = c.rotary_size();
  const int Q = c.q_size(), QKV = c.qkv_size(), I = c.mlp_size();
  const auto bt = static_cast<std::size_t>(B_) * T_;
  const auto uC = std::size_t(C), uQKV = std::size_t(QKV);
  Activations& a = *acts_;
  const std::size_t li = a.slot(l);
  const LlamaOffsets& o = *offsets_;
  F* dres = dresidual_.data();
  F* dsmall = dsmall_.data();
  F* dwide = dwide_.data();
  F* dmid = dmid_.data();
  const int unit = ParamLayout::block_unit(l);
  const F* p = access.params(unit);
  F* g = access.grads(unit);
  KernelClock clock(this->profiling_, this->profile_, Pass::backward);
  clock.restart();
  BasicLinearAdapter<F>* adapter = access.linear_adapter(unit);
  // Checkpointing: the slot holds the last block's activations; recompute block l's (its
  // output stream is kept, and the recomputation writes the same bits into it).
  if (recompute_ && l != c.n_layer - 1) block_forward(a, l, p, adapter, B_, T_, clock);
  // dx += the adapter's term of the linear at `weight` (after the linear's own backward).
  const auto adapt = [&](std::size_t weight, const F* in, const F* dy, F* dx, int IC, int OC) {
    if (adapter) adapter->backward(unit, weight, in, dy, dx, bt, IC, OC);
  };
  const F* qkv = a.qkv + li * bt * uQKV;
  const F* ln1 = a.ln1 + li * bt * uC;
  const F* ln2 = a.ln2 + li * bt * uC;
  const F* gate_up = a.gate_up + li * bt * 2 * a.I;

  // MLP: out = mid + down(swiglu(gate_up(rmsnorm(mid)))), dres = d out
  const F* act = a.act + li * bt * a.I;
  linear_backward(dmid, g + o.downw, tensor_at(g, o.downb), dres, act, p + o.downw, bt, I, C);
  adapt(o.downw, act, dres, dmid, I, C);
  clock.lap(kMatmul);
  swiglu_backward(dwide, dmid, gate_up, bt, I);
  clock.lap(kActivation);
  linear_backward(dsmall, g + o.guw, tensor_at(g, o.gub), dwide, ln2, p + o.guw, bt, C, 2 * I);
  adapt(o.guw, ln2, dwide, dsmall, C, 2 * I);
  clock.lap(kMatmul);
  rmsnorm_backward(dres, g + o.ln2w, dsmall, a.mid + li * bt * uC, p + o.ln2w, a.rstd2 + li * bt,
                   bt, 1, C, uC);
  clock.lap(kNorm);
  // Attention: mid = x + o_proj(attention(rope(norm_qk(qkv(rmsnorm(x)))))), dres = d mid
  const F* atty = a.atty + li * bt * a.Q;
  linear_backward(dsmall, g + o.ow, tensor_at(g, o.ob), dres, atty, p + o.ow, bt, Q, C);
  adapt(o.ow, atty, dres, dsmall, Q, C);
  clock.lap(kMatmul);
  attention_backward(dwide, datt_row_.data(), dsmall, qkv, a.att + li * a.att_stride, B_, T_, NH,
                     NKV, D);
  rope_backward(dwide, rope_cos_.data(), rope_sin_.data(), B_, T_, NH, D, R, uQKV, 0);
  rope_backward(dwide + Q, rope_cos_.data(), rope_sin_.data(), B_, T_, NKV, D, R, uQKV, 0);
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
    rmsnorm_backward(dmid, g + o.qnorm, dwide, pre, p + o.qnorm, rstd, bt, NH, D, uQKV);
    rmsnorm_backward(dmid + Q, g + o.knorm, dwide + Q, pre + Q, p + o.knorm,
                     rstd + bt * std::size_t(NH), bt, NKV, D, uQKV);
    clock.lap(kNorm);
    dqkv = dmid;
  }
  linear_backward(dsmall, g + o.qkvw, tensor_at(g, o.qkvb), dqkv, ln1, p + o.qkvw, bt, C, QKV);
  adapt(o.qkvw, ln1, dqkv, dsmall, C, QKV);
  clock.lap(kMatmul);
  rmsnorm_backward(dres, g + o.ln1w, dsmall, a.stream(l), p + o.ln1w, a.rstd1 + li * bt, bt, 1, C,
                   uC);
  clock.lap(kNorm);
  access.release(unit);
  access.grads_ready(unit);
}

template <typename F>
std::span<const F> BasicLlama<F>::next_token_logits(BasicUnitAccess<F>& access,
                                                    std::span<const std::int32_t> tokens) {
  const int n = static_cast<int>(tokens.size());
  AT_CHECK(n >= 1 && n <= config_.block_size, "generation: the context has ", tokens.size(),
           " tokens; it must hold 1 to max_position_embeddings = ", config_.block_size);
  check_tokens(tokens.data(), tokens.size(), config_.vocab_size, "tokens");
  if (!inference_ || inference_->bt < std::size_t(n)) {
    inference_ = std::make_unique<Activations>(config_, 1, n, 1, true);
  }
  ensure_rope(n);
  Activations& a = *inference_;
  // The activations' strides are their capacity's: a shorter context uses the front.
  const int capacity = static_cast<int>(a.bt);
  AT_CHECK(capacity >= n, "internal: inference buffers too small");
  const F* p = forward_to_final_norm(access, a, tokens.data(), 1, n);
  const int C = config_.n_embd, Vp = config_.padded_vocab_size;
  gemm<F>(Transpose::no, Transpose::yes, 1, Vp, C, F(1),
          a.lnf + static_cast<std::size_t>(n - 1) * C, C, p + offsets_->head, C, F(0), a.logits,
          Vp);
  access.release(head_unit());
  return {a.logits, static_cast<std::size_t>(config_.vocab_size)};
}

template <typename F>
void BasicLlama<F>::reset_cache() {
  if (!cache_) {
    cache_ = std::make_unique<Cache>(config_);
    ensure_rope(cache_->capacity);
  }
  cache_->length = 0;
}

template <typename F>
int BasicLlama<F>::cached_tokens() const {
  return cache_ ? cache_->length : 0;
}

template <typename F>
std::span<const F> BasicLlama<F>::feed_token(BasicUnitAccess<F>& access, std::int32_t token) {
  AT_CHECK(cache_ != nullptr, "generation: feed_token() needs reset_cache() first");
  Cache& k = *cache_;
  AT_CHECK(k.length < k.capacity, "generation: the cache holds ", k.capacity,
           " tokens already; reset it and feed the last window again");
  check_tokens(&token, 1, config_.vocab_size, "token");
  const ModelConfig& c = config_;
  const int C = c.n_embd, NH = c.n_head, NKV = c.kv_heads(), D = c.head_size(), R = c.rotary_size();
  const int Q = c.q_size(), QKV = c.qkv_size(), I = c.mlp_size(), L = c.n_layer;
  const int t = k.length;
  const auto uC = std::size_t(C), uQKV = std::size_t(QKV);
  const double eps = c.norm_eps;
  const LlamaOffsets& o = *offsets_;
  F* stats = k.stats.data();

  const F* p = access.params(0);
  std::memcpy(k.x.data(), p + o.embed + std::size_t(token) * uC, uC * sizeof(F));
  access.release(0);
  for (int l = 0; l < L; ++l) {
    p = access.params(ParamLayout::block_unit(l));
    F* rows = k.qkv.data() + std::size_t(l) * std::size_t(k.capacity) * uQKV;
    F* row = rows + std::size_t(t) * uQKV;
    rmsnorm_forward(k.ln.data(), stats, k.x.data(), p + o.ln1w, 1, 1, C, uC, eps);
    if (c.qk_norm) {
      linear_forward(k.pre.data(), k.ln.data(), p + o.qkvw, tensor_at(p, o.qkvb), 1, C, QKV);
      std::memcpy(row, k.pre.data(), uQKV * sizeof(F));
      rmsnorm_forward(row, stats, k.pre.data(), p + o.qnorm, 1, NH, D, uQKV, eps);
      rmsnorm_forward(row + Q, stats + NH, k.pre.data() + Q, p + o.knorm, 1, NKV, D, uQKV, eps);
    } else {
      linear_forward(row, k.ln.data(), p + o.qkvw, tensor_at(p, o.qkvb), 1, C, QKV);
    }
    rope_forward(row, rope_cos_.data(), rope_sin_.data(), 1, 1, NH, D, R, uQKV, t);
    rope_forward(row + Q, rope_cos_.data(), rope_sin_.data(), 1, 1, NKV, D, R, uQKV, t);
    attention_forward_last(k.atty.data(), k.scratch.data(), rows, t + 1, NH, NKV, D);
    linear_forward(k.proj.data(), k.atty.data(), p + o.ow, tensor_at(p, o.ob), 1, Q, C);
    residual_forward(k.mid.data(), k.x.data(), k.proj.data(), uC);
    rmsnorm_forward(k.ln.data(), stats, k.mid.data(), p + o.ln2w, 1, 1, C, uC, eps);
    linear_forward(k.gate_up.data(), k.ln.data(), p + o.guw, tensor_at(p, o.gub), 1, C, 2 * I);
    swiglu_forward(k.act.data(), k.gate_up.data(), 1, I);
    linear_forward(k.proj.data(), k.act.data(), p + o.downw, tensor_at(p, o.downb), 1, I, C);
    residual_forward(k.x.data(), k.mid.data(), k.proj.data(), uC);
    access.release(ParamLayout::block_unit(l));
  }
  p = access.params(L + 1);
  rmsnorm_forward(k.ln.data(), stats, k.x.data(), p + o.normw, 1, 1, C, uC, eps);
  if (head_unit() == 0) {
    access.release(L + 1);
    p = access.params(0);
  }
  const int Vp = c.padded_vocab_size;
  gemm<F>(Transpose::no, Transpose::yes, 1, Vp, C, F(1), k.ln.data(), C, p + o.head, C, F(0),
          k.logits.data(), Vp);
  access.release(head_unit());
  ++k.length;
  return {k.logits.data(), static_cast<std::size_t>(c.vocab_size)};
}

template <typename F>
std::span<const F> BasicLlama<F>::losses() const {
  return {acts_->losses, static_cast<std::size_t>(B_) * T_};
}

template <typename F>
std::size_t BasicLlama<F>::activation_bytes() const {
  const std::size_t elements = acts_->storage.size() + dresidual_.size() + dsmall_.size() +
                               dwide_.size() + dmid_.size() + datt_row_.size();
  return elements * sizeof(F);
}

template class BasicLlama<float>;
template class BasicLlama<double>;

}  // namespace autotrain::model
