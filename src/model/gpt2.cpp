// GPT-2's parts of the CPU models' driver (model/decoder_driver.hpp): token and position
// embeddings, pre-LayerNorm blocks (causal self-attention, GELU MLP of 4C), the final LayerNorm.
// Shapes: B batch, T positions, C = n_embd, NH heads, L layers.
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
#include "kernel_clock.hpp"

namespace autotrain::model {

using namespace autotrain::kernels;

// Activations kept for backward, carved from one allocation. Per-layer tensors are laid out
// [L, ...] with strides of the capacity (B, T); a shorter sequence uses the front of each slot.
// Under activation checkpointing (model/recompute.hpp; inference runs as `full`) some have one
// slot that every block overwrites, and backward recomputes a block's into it: the stream
// (residual3) always keeps L slots; the cheap tensors (ln1 and ln2 with their statistics, the
// GELU's output fch_gelu) have one unless `none`; the costly ones (qkv, atty, lse, residual2,
// fch) have one under `full` only.
template <typename F>
struct BasicGpt2<F>::Activations {
  std::vector<F> storage;
  std::size_t btc = 0;           // B·T·C of the capacity: stride of per-layer [B, T, C] tensors
  std::size_t bt = 0;            // B·T
  std::size_t lse_stride = 0;    // B·NH·T
  F* encoded;                    // [B, T, C]
  F *ln1, *ln1_mean, *ln1_rstd;  // [L, B, T, C], [L, B, T]
  F* qkv;                        // [L, B, T, 3C]
  F* atty;                       // [L, B, T, C]
  F* lse;                        // [L, B, NH, T] attention's log-sum-exp per row
  F* residual2;                  // [L, B, T, C]
  F *ln2, *ln2_mean, *ln2_rstd;  // [L, B, T, C], [L, B, T]
  F *fch, *fch_gelu;             // [L, B, T, 4C]
  F* residual3;                  // [L, B, T, C]
  F *lnf, *lnf_mean, *lnf_rstd;  // [B, T, C], [B, T]
  F* proj;                       // [B, T, C] output of c_proj before the residual add

  // Layer l's slice of the per-layer tensors: what its forward writes and its backward reads.
  struct Layer {
    F *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *lse, *residual2;
    F *ln2, *ln2_mean, *ln2_rstd, *fch, *fch_gelu, *residual3;
  };
  Layer layer(int l) const {
    const auto i = static_cast<std::size_t>(l);
    const std::size_t s = slot_of(Kept::cheap, mode, l);   // ln1, ln2, fch_gelu
    const std::size_t k = slot_of(Kept::costly, mode, l);  // qkv, atty, lse, residual2, fch
    return {ln1 + s * btc,      ln1_mean + s * bt,    ln1_rstd + s * bt,   qkv + k * 3 * btc,
            atty + k * btc,     lse + k * lse_stride, residual2 + k * btc, ln2 + s * btc,
            ln2_mean + s * bt,  ln2_rstd + s * bt,    fch + k * 4 * btc,   fch_gelu + s * 4 * btc,
            residual3 + i * btc};
  }

  Recompute mode;

  Activations(const ModelConfig& c, int B, int T, Recompute mode_) : mode(mode_) {
    const std::size_t layers = static_cast<std::size_t>(c.n_layer);
    const std::size_t S = slots_of(Kept::cheap, mode, layers);   // slots of the cheap tensors
    const std::size_t L = slots_of(Kept::costly, mode, layers);  // of the costly ones
    const std::size_t C = static_cast<std::size_t>(c.n_embd);
    bt = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
    btc = bt * C;
    lse_stride = static_cast<std::size_t>(B) * c.n_head * static_cast<std::size_t>(T);
    // (pointer, elements) in allocation order; pointers are fixed up after the one allocation.
    std::vector<std::pair<F**, std::size_t>> parts = {{&encoded, btc},
                                                      {&ln1, S * btc},
                                                      {&ln1_mean, S * bt},
                                                      {&ln1_rstd, S * bt},
                                                      {&qkv, L * 3 * btc},
                                                      {&atty, L * btc},
                                                      {&lse, L * lse_stride},
                                                      {&residual2, L * btc},
                                                      {&ln2, S * btc},
                                                      {&ln2_mean, S * bt},
                                                      {&ln2_rstd, S * bt},
                                                      {&fch, L * 4 * btc},
                                                      {&fch_gelu, S * 4 * btc},
                                                      {&residual3, layers * btc},
                                                      {&lnf, btc},
                                                      {&lnf_mean, bt},
                                                      {&lnf_rstd, bt},
                                                      {&proj, btc}};
    carve(storage, parts);
  }
};

template <typename F>
BasicGpt2<F>::BasicGpt2(const ParamLayout& layout, int B, int T, Recompute recompute)
    : BasicDecoderDriver<F>(layout.config(), B, T, recompute, "block_size") {
  offsets_ = std::make_unique<TensorOffsets>(layout);
  const std::size_t bt = static_cast<std::size_t>(B) * T;
  const std::size_t C = static_cast<std::size_t>(config_.n_embd);
  acts_ = std::make_unique<Activations>(config_, B, T, recompute);
  dresidual_.assign(bt * C, F(0));
  dsmall_.assign(bt * C, F(0));
  dlarge_.assign(bt * 4 * C, F(0));
  datt_row_.assign(static_cast<std::size_t>(B) * config_.n_head * T, F(0));
  norm_discard_.assign(2 * C, F(0));
}

template <typename F>
BasicGpt2<F>::~BasicGpt2() = default;

template <typename F>
void BasicGpt2<F>::embed_forward(Run run, const F* p, const std::int32_t* tokens, int B, int T) {
  encoder_forward(acts(run).encoded, tokens, p + offsets_->wte, p + offsets_->wpe, B, T,
                  config_.n_embd);
}

// Block l from its input (the embedding or block l - 1's residual3) into a.layer(l).
template <typename F>
void BasicGpt2<F>::block_forward(Run run, int l, const F* p, BasicLinearAdapter<F>* adapter, int B,
                                 int T, KernelClock& clock) {
  Activations& a = acts(run);
  const int C = config_.n_embd, NH = config_.n_head;
  const std::size_t bt = static_cast<std::size_t>(B) * T;
  const TensorOffsets& o = *offsets_;
  const auto x = a.layer(l);
  const F* residual = l == 0 ? a.encoded : a.layer(l - 1).residual3;
  // y += the adapter's term of the linear at `weight` (LoRA's dropout in training), if any.
  const auto adapt = [&](std::size_t weight, const F* in, F* y, int IC, int OC) {
    if (adapter) adapter->forward(ParamLayout::block_unit(l), weight, in, y, bt, IC, OC);
  };
  layernorm_forward(x.ln1, x.ln1_mean, x.ln1_rstd, residual, p + o.ln1w, p + o.ln1b, bt, C);
  clock.lap(kNorm);
  matmul_forward(x.qkv, x.ln1, p + o.qkvw, p + o.qkvb, bt, C, 3 * C);
  adapt(o.qkvw, x.ln1, x.qkv, C, 3 * C);
  clock.lap(kMatmul);
  attention_forward(x.atty, x.lse, x.qkv, B, T, C, NH);
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

// Selective recompute: block l's norms from its kept input and residual2, the GELU from its kept
// fch (its adapters' terms are in fch already).
template <typename F>
void BasicGpt2<F>::block_recompute(int l, const F* p, KernelClock& clock) {
  const Activations& a = *acts_;
  const int C = config_.n_embd;
  const std::size_t bt = inputs_.size();
  const TensorOffsets& o = *offsets_;
  const auto x = a.layer(l);
  const F* residual = l == 0 ? a.encoded : a.layer(l - 1).residual3;
  layernorm_forward(x.ln1, x.ln1_mean, x.ln1_rstd, residual, p + o.ln1w, p + o.ln1b, bt, C);
  layernorm_forward(x.ln2, x.ln2_mean, x.ln2_rstd, x.residual2, p + o.ln2w, p + o.ln2b, bt, C);
  clock.lap(kNorm);
  gelu_forward(x.fch_gelu, x.fch, bt * 4 * C);
  clock.lap(kActivation);
}

template <typename F>
const F* BasicGpt2<F>::final_norm_forward(Run run, const F* p, int B, int T) {
  Activations& a = acts(run);
  const std::size_t bt = static_cast<std::size_t>(B) * T;
  layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, a.layer(config_.n_layer - 1).residual3,
                    p + offsets_->lnfw, p + offsets_->lnfb, bt, config_.n_embd);
  return a.lnf;
}

template <typename F>
void BasicGpt2<F>::final_norm_backward(const F* p, F* g) {
  const Activations& a = *acts_;
  const int C = config_.n_embd;
  const TensorOffsets& o = *offsets_;
  F* dweight = g != nullptr ? g + o.lnfw : norm_discard_.data();
  F* dbias = g != nullptr ? g + o.lnfb : norm_discard_.data() + C;
  std::fill(dresidual_.begin(), dresidual_.end(), F(0));
  layernorm_backward(dresidual_.data(), dweight, dbias, dsmall_.data(),
                     a.layer(config_.n_layer - 1).residual3, p + o.lnfw, a.lnf_mean, a.lnf_rstd,
                     inputs_.size(), C);
}

template <typename F>
void BasicGpt2<F>::block_backward(int l, const F* p, F* g, BasicLinearAdapter<F>* adapter,
                                  KernelClock& clock) {
  const Activations& a = *acts_;
  const int B = B_, T = T_;
  const int C = config_.n_embd, NH = config_.n_head;
  const std::size_t bt = inputs_.size();
  const TensorOffsets& o = *offsets_;
  F* dres = dresidual_.data();
  F* dsmall = dsmall_.data();
  F* dlarge = dlarge_.data();
  const auto x = a.layer(l);
  const F* residual = l == 0 ? a.encoded : a.layer(l - 1).residual3;
  const int unit = ParamLayout::block_unit(l);
  // dx += the adapter's term of the linear at `weight` (after the linear's own backward).
  const auto adapt = [&](std::size_t weight, const F* in, const F* dy, F* dx, int IC, int OC) {
    if (adapter) adapter->backward(unit, weight, in, dy, dx, bt, IC, OC);
  };

  // MLP branch: residual3 = residual2 + c_proj(gelu(c_fc(ln_2(residual2)))), dres = d residual3
  matmul_backward(dlarge, g + o.fcprojw, g + o.fcprojb, dres, x.fch_gelu, p + o.fcprojw, bt, 4 * C,
                  C);
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
  attention_backward(dlarge, datt_row_.data(), dsmall, x.qkv, x.lse, B, T, C, NH);
  clock.lap(kAttention);
  matmul_backward(dsmall, g + o.qkvw, g + o.qkvb, dlarge, x.ln1, p + o.qkvw, bt, C, 3 * C);
  adapt(o.qkvw, x.ln1, dlarge, dsmall, C, 3 * C);
  clock.lap(kMatmul);
  layernorm_backward(dres, g + o.ln1w, g + o.ln1b, dsmall, residual, p + o.ln1w, x.ln1_mean,
                     x.ln1_rstd, bt, C);
  clock.lap(kNorm);
}

template <typename F>
void BasicGpt2<F>::embed_backward(F* g) {
  encoder_backward(g + offsets_->wte, g + offsets_->wpe, dresidual_.data(), inputs_.data(), B_, T_,
                   config_.n_embd);
}

template <typename F>
std::size_t BasicGpt2<F>::family_activation_bytes() const {
  const std::size_t elements = acts_->storage.size() + dresidual_.size() + dsmall_.size() +
                               dlarge_.size() + datt_row_.size();
  return elements * sizeof(F);
}

// The activations' strides are their capacity's: a shorter context uses the front. They grow to
// the longest context asked for (a prompt's prefill need not allocate block_size positions).
template <typename F>
void BasicGpt2<F>::prepare_context(int n) {
  if (!inference_ || inference_->bt < static_cast<std::size_t>(n)) {
    inference_ = std::make_unique<Activations>(config_, 1, n, Recompute::full);
  }
}

// The key/value cache of incremental generation: every layer's qkv rows of the positions fed so
// far, and one position's worth of every other activation (reused by every layer and token).
template <typename F>
struct BasicGpt2<F>::Cache {
  std::vector<F> qkv;  // [L, block_size, 3C]
  std::vector<F> x, ln, atty, proj, residual2, fch, fch_gelu, scratch, stats;

  explicit Cache(const ModelConfig& c) {
    const auto C = static_cast<std::size_t>(c.n_embd);
    qkv.assign(static_cast<std::size_t>(c.n_layer) * static_cast<std::size_t>(c.block_size) * 3 * C,
               F(0));
    for (auto* v : {&x, &ln, &atty, &proj, &residual2}) v->assign(C, F(0));
    fch.assign(4 * C, F(0));
    fch_gelu.assign(4 * C, F(0));
    scratch.assign(static_cast<std::size_t>(c.block_size), F(0));
    stats.assign(2, F(0));  // one row's LayerNorm mean and rstd
  }
};

template <typename F>
int BasicGpt2<F>::open_cache() {
  if (!cache_) cache_ = std::make_unique<Cache>(config_);
  return config_.block_size;
}

template <typename F>
void BasicGpt2<F>::embed_row(const F* p, std::int32_t token, int t) {
  const auto uC = static_cast<std::size_t>(config_.n_embd);
  encoder_forward(cache_->x.data(), &token, p + offsets_->wte,
                  p + offsets_->wpe + static_cast<std::size_t>(t) * uC, 1, 1, config_.n_embd);
}

template <typename F>
void BasicGpt2<F>::block_row(int l, const F* p, int t) {
  Cache& k = *cache_;
  const int C = config_.n_embd, NH = config_.n_head;
  const auto uC = static_cast<std::size_t>(C);
  const TensorOffsets& o = *offsets_;
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
}

template <typename F>
void BasicGpt2<F>::keep_context_rows(int l, int n) {
  const std::size_t row = 3 * static_cast<std::size_t>(config_.n_embd);
  std::copy_n(inference_->layer(l).qkv, static_cast<std::size_t>(n) * row,
              cache_->qkv.data() + static_cast<std::size_t>(l) * config_.block_size * row);
}

template <typename F>
const F* BasicGpt2<F>::final_norm_row(const F* p) {
  Cache& k = *cache_;
  layernorm_forward(k.ln.data(), &k.stats[0], &k.stats[1], k.x.data(), p + offsets_->lnfw,
                    p + offsets_->lnfb, 1, config_.n_embd);
  return k.ln.data();
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
  head = layout.config().score_head ? rel("score.weight") : wte;
}

template class BasicGpt2<float>;
template class BasicGpt2<double>;

}  // namespace autotrain::model
