#pragma once
// GPT-2 forward and backward on the CPU (model/causal_lm.hpp; the family:
// src/model/gpt2_family.cpp).
//
// Hook order (part of the contract; L = n_layer, unit 0 = embeddings, 1..L = blocks, L+1 = ln_f):
//   forward:   params(0) release(0)                         encoder
//              params(u) release(u)          u = 1..L       blocks
//              params(L+1) release(L+1)                     final LayerNorm
//              params(0) release(0)                         tied LM head (wte again)
//   backward:  params(0) grads(0) release(0)                LM head: dwte +=
//              params(L+1) grads(L+1) release(L+1) grads_ready(L+1)
//              params(u) grads(u) release(u) grads_ready(u) u = L..1
//              grads(0) grads_ready(0)                      encoder (needs no parameters)
//   inference: the forward order.
// Pointers returned by params/grads point at the unit's first element (TensorOffsets locate each
// tensor). grads(u) may be called twice in one backward (unit 0): both calls must return the
// same accumulating buffer.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/config.hpp"
#include "autotrain/model/gpt2_offsets.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/profile.hpp"
#include "autotrain/model/unit_access.hpp"

namespace autotrain::model {

class KernelClock;  // src/model/kernel_clock.hpp

template <typename F>
class BasicGpt2 final : public BasicCausalLM<F> {
 public:
  // Allocates everything one micro-batch [B, T] needs (T <= block_size). `recompute`:
  // activation checkpointing (causal_lm.hpp).
  BasicGpt2(const ParamLayout& layout, int B, int T, bool recompute = false);
  ~BasicGpt2() override;
  BasicGpt2(const BasicGpt2&) = delete;
  BasicGpt2& operator=(const BasicGpt2&) = delete;

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

 private:
  struct Activations;
  F run_lm_head_and_loss(BasicUnitAccess<F>& access);
  void forward_to_final_norm(BasicUnitAccess<F>& access, Activations& acts,
                             const std::int32_t* inputs, int B, int T);
  // `adapter`: the unit's linear adapter (BasicUnitAccess::linear_adapter), or null.
  void block_forward(Activations& a, int l, const F* p, BasicLinearAdapter<F>* adapter,
                     const F* residual, int B, int T, KernelClock& clock);

  ModelConfig config_;
  int B_;
  int T_;
  bool recompute_;
  std::unique_ptr<TensorOffsets> offsets_;
  std::unique_ptr<Activations> acts_;
  std::unique_ptr<Activations> inference_;
  struct Cache;
  std::unique_ptr<Cache> cache_;
  std::vector<std::int32_t> inputs_;
  std::vector<std::int32_t> targets_;
  std::size_t loss_positions_ = 0;  // targets of the last forward that carry loss
  // Activation gradients, shared by all layers (each is overwritten before it is read):
  std::vector<F> dresidual_;  // [B, T, C] the residual stream, accumulated through the blocks
  std::vector<F> dsmall_;     // [B, T, C] d(ln output) / d(attention output) / d(lnf)
  std::vector<F> dlarge_;     // [B, T, 4C] d(fch) in the MLP, d(qkv) [B, T, 3C] in attention
  std::vector<F> datt_row_;   // [B, NH, T, T] attention backward scratch (d scores)
  bool ready_for_backward_ = false;
};

using Gpt2Model = BasicGpt2<float>;

}  // namespace autotrain::model
