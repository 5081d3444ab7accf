// GPT-2 forward and backward: pre-LayerNorm blocks, causal self-attention, GELU MLP (x4), tied
// LM head, fused softmax + cross-entropy over the padded vocabulary.
// Shapes: B batch, T positions, C = n_embd, NH heads, L layers, V vocabulary, Vp padded vocabulary.
// Invariants: nothing is allocated after construction (the inference buffers once, on first
// use); parameter gradients accumulate (+=); activation gradients are overwritten, except the
// residual stream, whose single gradient buffer [B, T, C] collects every block's contribution
// (LayerNorm backward adds into it).
// The device model (src/model/gpu/gpt2.cpp) is this file step for step, for the device's kernels;
// the training forward and the key/value-cache decode below share every kernel.
#include "autotrain/model/gpt2.hpp"

#include <algorithm>
#include <cmath>

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/attention.hpp"
#include "autotrain/kernels/crossentropy.hpp"
#include "autotrain/kernels/encoder.hpp"
#include "autotrain/kernels/gelu.hpp"
#include "autotrain/kernels/layernorm.hpp"
#include "autotrain/kernels/matmul.hpp"
#include "autotrain/kernels/residual.hpp"
#include "carve.hpp"
#include "check_tokens.hpp"
#include "kernel_clock.hpp"

namespace autotrain::model {

using namespace autotrain::kernels;

// Activations kept for backward, carved from one allocation. Per-layer tensors are laid out
// [L, ...] with strides of the capacity (B, T); a shorter sequence uses the front of each slot.
// With `one_slot` (activation checkpointing, and inference) only each block's output
// (residual3) keeps L slots: every other per-layer tensor has one slot that every block
// overwrites, and backward recomputes a block's into it from the block's input.
template <typename F>
struct BasicGpt2<F>::Activations {
  std::vector<F> storage;
  std::size_t btc = 0;           // B·T·C of the capacity: stride of per-layer [B, T, C] tensors
  std::size_t bt = 0;            // B·T
  std::size_t att_stride = 0;    // B·NH·T·T
  F* encoded;                    // [B, T, C]
  F *ln1, *ln1_mean, *ln1_rstd;  // [L, B, T, C], [L, B, T]
  F* qkv;                        // [L, B, T, 3C]
  F* atty;                       // [L, B, T, C]
  F* att;                        // [L, B, NH, T, T]
  F* residual2;                  // [L, B, T, C]
  F *ln2, *ln2_mean, *ln2_rstd;  // [L, B, T, C], [L, B, T]
  F *fch, *fch_gelu;             // [L, B, T, 4C]
  F* residual3;                  // [L, B, T, C]
  F *lnf, *lnf_mean, *lnf_rstd;  // [B, T, C], [B, T]
  F* proj;                       // [B, T, C] output of c_proj before the residual add
  F* logits;                     // [logits_rows, Vp]; holds dlogits after backward starts
  F *lse, *losses;               // [B, T]

  // Layer l's slice of the per-layer tensors: what its forward writes and its backward reads.
  struct Layer {
    F *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *att, *residual2;
    F *ln2, *ln2_mean, *ln2_rstd, *fch, *fch_gelu, *residual3;
  };
  Layer layer(int l) const {
    const auto i = static_cast<std::size_t>(l);
    const std::size_t s = one_slot ? 0 : i;  // the slot of the recomputable tensors
    return {ln1 + s * btc,      ln1_mean + s * bt,    ln1_rstd + s * bt,   qkv + s * 3 * btc,
            atty + s * btc,     att + s * att_stride, residual2 + s * btc, ln2 + s * btc,
            ln2_mean + s * bt,  ln2_rstd + s * bt,    fch + s * 4 * btc,   fch_gelu + s * 4 * btc,
            residual3 + i * btc};
  }

  bool one_slot = false;

  Activations(const ModelConfig& c, int B, int T, std::size_t logits_rows, bool one_slot_)
      : one_slot(one_slot_) {
    const std::size_t layers = static_cast<std::size_t>(c.n_layer);
    const std::size_t L = one_slot ? 1 : layers;  // slots of the recomputable tensors
    const std::size_t C = static_cast<std::size_t>(c.n_embd);
    bt = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
    btc = bt * C;
    att_stride = static_cast<std::size_t>(B) * c.n_head * static_cast<std::size_t>(T) * T;
    // (pointer, elements) in allocation order; pointers are fixed up after the one allocation.
    std::vector<std::pair<F**, std::size_t>> parts = {
        {&encoded, btc},
        {&ln1, L * btc},
        {&ln1_mean, L * bt},
        {&ln1_rstd, L * bt},
        {&qkv, L * 3 * btc},
        {&atty, L * btc},
        {&att, L * att_stride},
        {&residual2, L * btc},
        {&ln2, L * btc},
        {&ln2_mean, L * bt},
        {&ln2_rstd, L * bt},
        {&fch, L * 4 * btc},
        {&fch_gelu, L * 4 * btc},
        {&residual3, layers * btc},
        {&lnf, btc},
        {&lnf_mean, bt},
        {&lnf_rstd, bt},
        {&proj, btc},
        {&logits, logits_rows * static_cast<std::size_t>(c.padded_vocab_size)},
        {&lse, bt},
        {&losses, bt}};
    carve(storage, parts);
  }
};

template <typename F>
BasicGpt2<F>::BasicGpt2(const ParamLayout& layout, int B, int T, bool recompute)
    : config_(layout.config()), B_(B), T_(T), recompute_(recompute) {
  AT_CHECK(B >= 1, "model: batch_size must be >= 1, got ", B);
  AT_CHECK(T >= 1 && T <= config_.block_size, "model: sequence length ", T,
           " must be in [1, block_size = ", config_.block_size, "]");
  offsets_ = std::make_unique<TensorOffsets>(layout);
  const std::size_t bt = static_cast<std::size_t>(B) * T;
  const std::size_t C = static_cast<std::size_t>(config_.n_embd);
  acts_ = std::make_unique<Activations>(config_, B, T, bt, recompute);
  inputs_.assign(bt, 0);
  targets_.assign(bt, 0);
  dresidual_.assign(bt * C, F(0));
  dsmall_.assign(bt * C, F(0));
  dlarge_.assign(bt * 4 * C, F(0));
  datt_row_.assign(static_cast<std::size_t>(B) * config_.n_head * T * T, F(0));
}

template <typename F>
BasicGpt2<F>::~BasicGpt2() = default;

// Block l from its input `residual` into a.layer(l); the training forward, and backward's
// recomputation under activation checkpointing (the same kernels on the same inputs: the same
// bits).
template <typename F>
void BasicGpt2<F>::block_forward(Activations& a, int l, const F* p, BasicLinearAdapter<F>* adapter,
                                 const F* residual, int B, int T, KernelClock& clock) {
  const int C = config_.n_embd, NH = config_.n_head;
  const std::size_t bt = static_cast<std::size_t>(B) * T;
  const TensorOffsets& o = *offsets_;
  const auto x = a.layer(l);
  // y += the adapter's term of the linear at `weight` (LoRA's dropout in training), if any.
  const auto adapt = [&](std::size_t weight, const F* in, F* y, int IC, int OC) {
    if (adapter) adapter->forward(ParamLayout::block_unit(l), weight, in, y, bt, IC, OC);
  };
  layernorm_forward(x.ln1, x.ln1_mean, x.ln1_rstd, residual, p + o.ln1w, p + o.ln1b, bt, C);
  clock.lap(kNorm);
  matmul_forward(x.qkv, x.ln1, p + o.qkvw, p + o.qkvb, bt, C, 3 * C);
  adapt(o.qkvw, x.ln1, x.qkv, C, 3 * C);
  clock.lap(kMatmul);
  attention_forward(x.atty, x.att, x.qkv, B, T, C, NH);
  clock.lap(kAttention);
  matmul_forward(a.proj, x.atty, p + o.attprojw, p + o.attprojb, bt, C, C);
  adapt(o.attprojw, x.atty, a.proj, C, C);
  clock.lap(kMatmul);
  residual_forward(x.residual2, residual, a.proj, bt * C);
  clock.lap(kResidual);
  layernorm_forward(x.ln2, x.ln2_mean, x.ln2_rstd, x.residual2, p + o.ln2w, p + o.ln2b, bt, C);
  clock.lap(kNorm);
  matmul_forward(x.fch, x.ln2, p + o.fcw, p + o.fcb, bt, C, 4 * C);
  adapt(o.fcw, x.ln2, x.fch, C, 4 * C);
  clock.lap(kMatmul);
  gelu_forward(x.fch_gelu, x.fch, bt * 4 * C);
  clock.lap(kActivation);
  matmul_forward(a.proj, x.fch_gelu, p + o.fcprojw, p + o.fcprojb, bt, 4 * C, C);
  adapt(o.fcprojw, x.fch_gelu, a.proj, 4 * C, C);
  clock.lap(kMatmul);
  residual_forward(x.residual3, x.residual2, a.proj, bt * C);
  clock.lap(kResidual);
}

template <typename F>
void BasicGpt2<F>::forward_to_final_norm(BasicUnitAccess<F>& access, Activations& a,
                                         const std::int32_t* inputs, int B, int T) {
  const int C = config_.n_embd, L = config_.n_layer;
  const std::size_t bt = static_cast<std::size_t>(B) * T;
  const TensorOffsets& o = *offsets_;
  KernelClock clock(this->profiling_, this->profile_, Pass::forward);

  const F* p = access.params(0);
  clock.restart();
  encoder_forward(a.encoded, inputs, p + o.wte, p + o.wpe, B, T, C);
  clock.lap(kEncoder);
  access.release(0);

  const F* residual = a.encoded;
  for (int l = 0; l < L; ++l) {
    p = access.params(ParamLayout::block_unit(l));
    clock.restart();
    block_forward(a, l, p, access.linear_adapter(ParamLayout::block_unit(l)), residual, B, T,
                  clock);
    access.release(ParamLayout::block_unit(l));
    residual = a.layer(l).residual3;
  }

  const int ln_f = L + 1;
  p = access.params(ln_f);
  clock.restart();
  layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, residual, p + o.lnfw, p + o.lnfb, bt, C);
  clock.lap(kNorm);
  access.release(ln_f);
}

template <typename F>
F BasicGpt2<F>::forward(BasicUnitAccess<F>& access, const std::int32_t* inputs,
                        const std::int32_t* targets) {
  const std::size_t bt = static_cast<std::size_t>(B_) * T_;
  loss_positions_ =
      keep_batch(inputs, targets, bt, config_.vocab_size, inputs_.data(), targets_.data());
  forward_to_final_norm(access, *acts_, inputs_.data(), B_, T_);
  return run_lm_head_and_loss(access);
}

template <typename F>
F BasicGpt2<F>::run_lm_head_and_loss(BasicUnitAccess<F>& access) {
  Activations& a = *acts_;
  const std::size_t bt = static_cast<std::size_t>(B_) * T_;
  const int C = config_.n_embd, V = config_.vocab_size, Vp = config_.padded_vocab_size;
  KernelClock clock(this->profiling_, this->profile_, Pass::forward);
  const F* p = access.params(0);
  clock.restart();
  // logits[BT, Vp] = lnf[BT, C] · wte[Vp, C]ᵀ (tied LM head)
  gemm<F>(Transpose::no, Transpose::yes, bt, Vp, C, F(1), a.lnf, C, p + offsets_->wte, C, F(0),
          a.logits, Vp);
  clock.lap(kLmHead);
  access.release(0);
  clock.restart();
  crossentropy_forward(a.losses, a.lse, a.logits, targets_.data(), bt, V, Vp);
  clock.lap(kCrossEntropy);
  ready_for_backward_ = true;
  return static_cast<F>(mean_loss(a.losses, bt, loss_positions_));
}

template <typename F>
void BasicGpt2<F>::backward(BasicUnitAccess<F>& access, F loss_scale) {
  AT_CHECK(ready_for_backward_, "model: backward() needs a forward() with targets before it");
  ready_for_backward_ = false;  // the logits buffer becomes dlogits
  Activations& a = *acts_;
  const int B = B_, T = T_;
  const int C = config_.n_embd, NH = config_.n_head, L = config_.n_layer;
  const int V = config_.vocab_size, Vp = config_.padded_vocab_size;
  const std::size_t bt = static_cast<std::size_t>(B) * T;
  const TensorOffsets& o = *offsets_;
  F* dres = dresidual_.data();
  F* dsmall = dsmall_.data();
  F* dlarge = dlarge_.data();
  KernelClock clock(this->profiling_, this->profile_, Pass::backward);

  // d(mean loss · scale)/d(loss of one position)
  const F dloss = position_dloss(loss_scale, loss_positions_);
  crossentropy_backward(a.logits, a.logits, a.lse, targets_.data(), dloss, bt, V, Vp);
  clock.lap(kCrossEntropy);
  {
    const F* p = access.params(0);
    clock.restart();
    const SharedBf16Operand dlogits(a.logits, bt * std::size_t(Vp));  // read by both products
    // dwte[Vp, C] += dlogits[BT, Vp]ᵀ · lnf[BT, C] (unless frozen);  dlnf[BT, C] = dlogits · wte
    if (!access.frozen(0)) {
      gemm<F>(Transpose::yes, Transpose::no, Vp, C, bt, F(1), a.logits, Vp, a.lnf, C, F(1),
              access.grads(0) + o.wte, C);
    }
    gemm<F>(Transpose::no, Transpose::no, bt, C, Vp, F(1), a.logits, Vp, p + o.wte, C, F(0), dsmall,
            C);
    clock.lap(kLmHead);
    access.release(0);
  }
  {
    const int ln_f = L + 1;
    const F* p = access.params(ln_f);
    F* g = access.grads(ln_f);
    std::fill(dresidual_.begin(), dresidual_.end(), F(0));
    clock.restart();
    layernorm_backward(dres, g + o.lnfw, g + o.lnfb, dsmall, a.layer(L - 1).residual3, p + o.lnfw,
                       a.lnf_mean, a.lnf_rstd, bt, C);
    clock.lap(kNorm);
    access.release(ln_f);
    access.grads_ready(ln_f);
  }
  for (int l = L - 1; l >= 0; --l) {
    const int unit = ParamLayout::block_unit(l);
    const F* p = access.params(unit);
    F* g = access.grads(unit);
    clock.restart();
    const auto x = a.layer(l);
    const F* residual = l == 0 ? a.encoded : a.layer(l - 1).residual3;
    BasicLinearAdapter<F>* adapter = access.linear_adapter(unit);
    // Checkpointing: the slot holds the last block's activations; recompute block l's. Its
    // output (residual3) is kept, and the recomputation writes the same bits into it.
    if (recompute_ && l != L - 1) block_forward(a, l, p, adapter, residual, B, T, clock);
    // dx += the adapter's term of the linear at `weight` (after the linear's own backward).
    const auto adapt = [&](std::size_t weight, const F* in, const F* dy, F* dx, int IC, int OC) {
      if (adapter) adapter->backward(unit, weight, in, dy, dx, bt, IC, OC);
    };

    // MLP branch: residual3 = residual2 + c_proj(gelu(c_fc(ln_2(residual2)))), dres = d residual3
    matmul_backward(dlarge, g + o.fcprojw, g + o.fcprojb, dres, x.fch_gelu, p + o.fcprojw, bt,
                    4 * C, C);
    adapt(o.fcprojw, x.fch_gelu, dres, dlarge, 4 * C, C);
    clock.lap(kMatmul);
    gelu_backward(dlarge, x.fch, dlarge, bt * 4 * C);
    clock.lap(kActivation);
    matmul_backward(dsmall, g + o.fcw, g + o.fcb, dlarge, x.ln2, p + o.fcw, bt, C, 4 * C);
    adapt(o.fcw, x.ln2, dlarge, dsmall, C, 4 * C);
    clock.lap(kMatmul);
    layernorm_backward(dres, g + o.ln2w, g + o.ln2b, dsmall, x.residual2, p + o.ln2w, x.ln2_mean,
                       x.ln2_rstd, bt, C);
    clock.lap(kNorm);
    // Attention branch: residual2 = residual + c_proj(attn(c_attn(ln_1(residual)))),
    // dres = d residual2 now
    matmul_backward(dsmall, g + o.attprojw, g + o.attprojb, dres, x.atty, p + o.attprojw, bt, C, C);
    adapt(o.attprojw, x.atty, dres, dsmall, C, C);
    clock.lap(kMatmul);
    attention_backward(dlarge, datt_row_.data(), dsmall, x.qkv, x.att, B, T, C, NH);
    clock.lap(kAttention);
    matmul_backward(dsmall, g + o.qkvw, g + o.qkvb, dlarge, x.ln1, p + o.qkvw, bt, C, 3 * C);
    adapt(o.qkvw, x.ln1, dlarge, dsmall, C, 3 * C);
    clock.lap(kMatmul);
    layernorm_backward(dres, g + o.ln1w, g + o.ln1b, dsmall, residual, p + o.ln1w, x.ln1_mean,
                       x.ln1_rstd, bt, C);
    clock.lap(kNorm);
    access.release(unit);
    access.grads_ready(unit);
  }
  if (!access.frozen(0)) {
    F* g = access.grads(0);
    clock.restart();
    encoder_backward(g + o.wte, g + o.wpe, dres, inputs_.data(), B, T, C);
    clock.lap(kEncoder);
  }
  access.grads_ready(0);
}

template <typename F>
std::span<const F> BasicGpt2<F>::next_token_logits(BasicUnitAccess<F>& access,
                                                   std::span<const std::int32_t> tokens) {
  const int n = static_cast<int>(tokens.size());
  AT_CHECK(n >= 1 && n <= config_.block_size, "generation: the context has ", tokens.size(),
           " tokens; it must hold 1 to block_size = ", config_.block_size);
  check_tokens(tokens.data(), tokens.size(), config_.vocab_size, "tokens");
  if (!inference_) {
    inference_ = std::make_unique<Activations>(config_, 1, config_.block_size, 1, true);
  }
  Activations& a = *inference_;
  forward_to_final_norm(access, a, tokens.data(), 1, n);
  const int C = config_.n_embd, Vp = config_.padded_vocab_size;
  const F* p = access.params(0);
  // logits[1, Vp] = lnf[n - 1, :] · wte[Vp, C]ᵀ: only the last position is needed.
  gemm<F>(Transpose::no, Transpose::yes, 1, Vp, C, F(1),
          a.lnf + static_cast<std::size_t>(n - 1) * C, C, p + offsets_->wte, C, F(0), a.logits, Vp);
  access.release(0);
  return {a.logits, static_cast<std::size_t>(config_.vocab_size)};
}

// The key/value cache of incremental generation: every layer's qkv rows of the positions fed so
// far, and one position's worth of every other activation (reused by every layer and token).
template <typename F>
struct BasicGpt2<F>::Cache {
  std::vector<F> qkv;  // [L, block_size, 3C]
  std::vector<F> x, ln, atty, proj, residual2, fch, fch_gelu, logits, scratch, stats;
  int length = 0;

  explicit Cache(const ModelConfig& c) {
    const auto C = static_cast<std::size_t>(c.n_embd);
    qkv.assign(static_cast<std::size_t>(c.n_layer) * static_cast<std::size_t>(c.block_size) * 3 * C,
               F(0));
    for (auto* v : {&x, &ln, &atty, &proj, &residual2}) v->assign(C, F(0));
    fch.assign(4 * C, F(0));
    fch_gelu.assign(4 * C, F(0));
    logits.assign(static_cast<std::size_t>(c.padded_vocab_size), F(0));
    scratch.assign(static_cast<std::size_t>(c.block_size), F(0));
    stats.assign(2, F(0));  // one row's LayerNorm mean and rstd
  }
};

template <typename F>
void BasicGpt2<F>::reset_cache() {
  if (!cache_) cache_ = std::make_unique<Cache>(config_);
  cache_->length = 0;
}

template <typename F>
int BasicGpt2<F>::cached_tokens() const {
  return cache_ ? cache_->length : 0;
}

template <typename F>
std::span<const F> BasicGpt2<F>::feed_token(BasicUnitAccess<F>& access, std::int32_t token) {
  AT_CHECK(cache_ != nullptr, "generation: feed_token() needs reset_cache() first");
  Cache& k = *cache_;
  AT_CHECK(k.length < config_.block_size,
           "generation: the cache holds block_size = ", config_.block_size,
           " tokens already; reset it and feed the last window again");
  check_tokens(&token, 1, config_.vocab_size, "token");
  const int C = config_.n_embd, NH = config_.n_head, L = config_.n_layer;
  const int t = k.length;  // this token's position
  const auto uC = static_cast<std::size_t>(C);
  const TensorOffsets& o = *offsets_;

  const F* p = access.params(0);
  encoder_forward(k.x.data(), &token, p + o.wte, p + o.wpe + static_cast<std::size_t>(t) * uC, 1, 1,
                  C);
  access.release(0);
  for (int l = 0; l < L; ++l) {
    p = access.params(ParamLayout::block_unit(l));
    // This layer's qkv rows of positions 0..t; row t is computed now.
    F* rows = k.qkv.data() + static_cast<std::size_t>(l) * config_.block_size * 3 * uC;
    F* row = rows + static_cast<std::size_t>(t) * 3 * uC;
    layernorm_forward(k.ln.data(), &k.stats[0], &k.stats[1], k.x.data(), p + o.ln1w, p + o.ln1b, 1,
                      C);
    matmul_forward(row, k.ln.data(), p + o.qkvw, p + o.qkvb, 1, C, 3 * C);
    attention_forward_last(k.atty.data(), k.scratch.data(), rows, t + 1, C, NH);
    matmul_forward(k.proj.data(), k.atty.data(), p + o.attprojw, p + o.attprojb, 1, C, C);
    residual_forward(k.residual2.data(), k.x.data(), k.proj.data(), uC);
    layernorm_forward(k.ln.data(), &k.stats[0], &k.stats[1], k.residual2.data(), p + o.ln2w,
                      p + o.ln2b, 1, C);
    matmul_forward(k.fch.data(), k.ln.data(), p + o.fcw, p + o.fcb, 1, C, 4 * C);
    gelu_forward(k.fch_gelu.data(), k.fch.data(), 4 * uC);
    matmul_forward(k.proj.data(), k.fch_gelu.data(), p + o.fcprojw, p + o.fcprojb, 1, 4 * C, C);
    residual_forward(k.x.data(), k.residual2.data(), k.proj.data(), uC);
    access.release(ParamLayout::block_unit(l));
  }
  p = access.params(L + 1);
  layernorm_forward(k.ln.data(), &k.stats[0], &k.stats[1], k.x.data(), p + o.lnfw, p + o.lnfb, 1,
                    C);
  access.release(L + 1);
  p = access.params(0);
  const int Vp = config_.padded_vocab_size;
  gemm<F>(Transpose::no, Transpose::yes, 1, Vp, C, F(1), k.ln.data(), C, p + o.wte, C, F(0),
          k.logits.data(), Vp);
  access.release(0);
  ++k.length;
  return {k.logits.data(), static_cast<std::size_t>(config_.vocab_size)};
}

template <typename F>
std::span<const F> BasicGpt2<F>::losses() const {
  return {acts_->losses, static_cast<std::size_t>(B_) * T_};
}

template <typename F>
std::size_t BasicGpt2<F>::activation_bytes() const {
  const std::size_t elements = acts_->storage.size() + dresidual_.size() + dsmall_.size() +
                               dlarge_.size() + datt_row_.size();
  return elements * sizeof(F);
}

TensorOffsets::TensorOffsets(const ParamLayout& layout) {
  const auto rel = [&](std::string_view name) {
    return layout.offset_in_unit(layout.tensor(name));
  };
  wte = rel("transformer.wte.weight");
  wpe = rel("transformer.wpe.weight");
  ln1w = rel("transformer.h.0.ln_1.weight");
  ln1b = rel("transformer.h.0.ln_1.bias");
  qkvw = rel("transformer.h.0.attn.c_attn.weight");
  qkvb = rel("transformer.h.0.attn.c_attn.bias");
  attprojw = rel("transformer.h.0.attn.c_proj.weight");
  attprojb = rel("transformer.h.0.attn.c_proj.bias");
  ln2w = rel("transformer.h.0.ln_2.weight");
  ln2b = rel("transformer.h.0.ln_2.bias");
  fcw = rel("transformer.h.0.mlp.c_fc.weight");
  fcb = rel("transformer.h.0.mlp.c_fc.bias");
  fcprojw = rel("transformer.h.0.mlp.c_proj.weight");
  fcprojb = rel("transformer.h.0.mlp.c_proj.bias");
  lnfw = rel("transformer.ln_f.weight");
  lnfb = rel("transformer.ln_f.bias");
}

template class BasicGpt2<float>;
template class BasicGpt2<double>;

}  // namespace autotrain::model
