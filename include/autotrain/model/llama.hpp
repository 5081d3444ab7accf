#pragma once
// The Llama-style decoder's forward and backward on the CPU (model/causal_lm.hpp), which the
// Llama family (src/model/llama_family.cpp), Phi-3 (phi3_family.cpp) and Gemma 2 and 3
// (gemma_family.cpp) run; their tensors: src/model/decoder_family.cpp. Training: llama.cpp;
// generation: llama_generate.cpp.
//
// Hook order (L = n_layer, unit 0 = embeddings, 1..L = blocks, L+1 = final norm and LM head):
//   forward:   params(0) release(0)                         embedding lookup
//              params(u) release(u)          u = 1..L       blocks
//              params(L+1) release(L+1)                     final RMSNorm (and untied LM head)
//              params(0) release(0)                         tied LM head only
//   backward:  tied:   params(0) grads(0) release(0)        LM head: dembed +=
//              params(L+1) grads(L+1) release(L+1) grads_ready(L+1)   (untied: LM head too)
//              params(u) grads(u) release(u) grads_ready(u) u = L..1
//              grads(0) grads_ready(0)                      embeddings (need no parameters)
//   inference: the forward order.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "autotrain/kernels/attention.hpp"
#include "autotrain/model/causal_lm.hpp"

namespace autotrain::model {

class KernelClock;    // src/model/kernel_clock.hpp
struct LlamaOffsets;  // src/model/llama_offsets.hpp: where each tensor sits in its unit

template <typename F>
class BasicLlama final : public BasicCausalLM<F> {
 public:
  // Allocates everything one micro-batch [B, T] needs (T <= block_size).
  // `recompute`: activation checkpointing (causal_lm.hpp).
  BasicLlama(const ParamLayout& layout, int B, int T, bool recompute = false);
  ~BasicLlama() override;
  BasicLlama(const BasicLlama&) = delete;
  BasicLlama& operator=(const BasicLlama&) = delete;

  int batch_size() const override { return B_; }
  int seq_len() const override { return T_; }
  const ModelConfig& config() const override { return config_; }
  F forward(BasicUnitAccess<F>& access, const std::int32_t* inputs,
            const std::int32_t* targets) override;
  void backward(BasicUnitAccess<F>& access, F loss_scale) override;
  std::span<const F> next_token_logits(BasicUnitAccess<F>& access,
                                       std::span<const std::int32_t> tokens) override;
  void reset_cache() override;
  std::span<const F> feed_token(BasicUnitAccess<F>& access, std::int32_t token) override;
  int cached_tokens() const override;
  std::span<const F> losses() const override;
  std::size_t activation_bytes() const override;

  struct Activations;
  struct Cache;

 private:
  // Through the final norm; returns the parameters of the unit holding the LM head, acquired
  // (its release is the caller's).
  const F* forward_to_final_norm(BasicUnitAccess<F>& access, Activations& a,
                                 const std::int32_t* inputs, int B, int T);
  void block_backward(BasicUnitAccess<F>& access, int l);
  // One block of feed_token at position t (llama_generate.cpp).
  void block_step(Cache& cache, int l, const F* p, int t);
  // out[n, C] = the embeddings of tokens[n] (scaled by sqrt(C) with embed_scale).
  void embed(F* out, const std::int32_t* tokens, std::size_t n, const F* table) const;
  // logits[rows, Vp] from the final norm's output and the head (soft-capped where the model is).
  void head_forward(const F* lnf, const F* p, F* logits, std::size_t rows) const;
  kernels::AttentionOptions attention_options(int l) const;  // layer l's scale, cap and window
  std::pair<const F*, const F*> rope_tables(int l) const;    // layer l's cos and sin
  double norm_offset() const;  // the RMSNorms' weight offset: 1 with norm_offset, else 0
  F embed_scale() const;
  // `adapter`: the unit's linear adapter (BasicUnitAccess::linear_adapter), or null.
  void block_forward(Activations& a, int l, const F* p, BasicLinearAdapter<F>* adapter, int B,
                     int T, KernelClock& clock);
  // rope_cos_/rope_sin_ hold at least `positions` rows.
  void ensure_rope(int positions);
  int head_unit() const;  // the unit holding the LM head

  ModelConfig config_;
  int B_;
  int T_;
  bool recompute_;
  std::unique_ptr<LlamaOffsets> offsets_;
  std::unique_ptr<Activations> acts_;
  std::unique_ptr<Activations> inference_;
  std::unique_ptr<Cache> cache_;
  std::vector<F> rope_cos_, rope_sin_;              // [positions, rotary dimensions / 2]
  std::vector<F> rope_local_cos_, rope_local_sin_;  // the sliding layers' (rope_local_theta)
  int rope_positions_ = 0;
  std::vector<std::int32_t> inputs_, targets_;
  std::size_t loss_positions_ = 0;  // targets of the last forward that carry loss
  // Activation gradients, shared by all layers (each is overwritten before it is read):
  std::vector<F> dresidual_;     // [B, T, C] the residual stream
  std::vector<F> dsmall_;        // [B, T, max(C, NH·D)] d(norm output) / d(attention output)
  std::vector<F> dwide_;         // [B, T, max(2I, QKV)] d(gate|up), d(qkv)
  std::vector<F> dmid_;          // [B, T, max(I, QKV)] d(swiglu output), d(qkv before q/k norm)
  std::vector<F> dpost_;         // [B, T, C] d(a branch's output) under sandwich norms
  std::vector<F> datt_row_;      // [B, NH, T, T] attention backward scratch (× 2 with a soft cap)
  std::vector<F> norm_discard_;  // [C] the final norm's gradient when its unit is frozen
  bool ready_for_backward_ = false;
};

using LlamaModel = BasicLlama<float>;

}  // namespace autotrain::model
