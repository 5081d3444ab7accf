#pragma once
// GPT-2 on the CPU: a family of the CPU models' driver (model/decoder_driver.hpp: the interface
// and the hook order; the family's description: src/model/gpt2_family.cpp). Its parts: the token
// and position embeddings, pre-LayerNorm blocks of causal self-attention and a GELU MLP, the
// final LayerNorm; the head is the token embeddings (wte). TensorOffsets locate each tensor in
// its unit.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/config.hpp"
#include "autotrain/model/decoder_driver.hpp"
#include "autotrain/model/gpt2_offsets.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/profile.hpp"
#include "autotrain/model/unit_access.hpp"

namespace autotrain::model {

class KernelClock;  // src/model/kernel_clock.hpp

template <typename F>
class BasicGpt2 final : public BasicDecoderDriver<F> {
 public:
  // Allocates everything one micro-batch [B, T] needs (T <= block_size). `recompute`:
  // activation checkpointing (model/recompute.hpp).
  BasicGpt2(const ParamLayout& layout, int B, int T, Recompute recompute = Recompute::none);
  ~BasicGpt2() override;
  BasicGpt2(const BasicGpt2&) = delete;
  BasicGpt2& operator=(const BasicGpt2&) = delete;

 private:
  using Run = typename BasicDecoderDriver<F>::Run;
  struct Activations;
  struct Cache;
  Activations& acts(Run run) { return run == Run::training ? *acts_ : *inference_; }

  // The driver's parts (model/decoder_driver.hpp).
  void embed_forward(Run run, const F* p, const std::int32_t* tokens, int B, int T) override;
  void block_forward(Run run, int l, const F* p, BasicLinearAdapter<F>* adapter, int B, int T,
                     KernelClock& clock) override;
  void block_recompute(int l, const F* p, KernelClock& clock) override;
  const F* final_norm_forward(Run run, const F* p, int B, int T) override;
  void final_norm_backward(const F* p, F* g) override;
  void block_backward(int l, const F* p, F* g, BasicLinearAdapter<F>* adapter,
                      KernelClock& clock) override;
  void embed_backward(F* g) override;
  F* dnormed() override { return dsmall_.data(); }
  std::size_t head_offset() const override { return offsets_->head; }
  std::size_t family_activation_bytes() const override;
  void prepare_context(int n) override;
  int open_cache() override;
  void embed_row(const F* p, std::int32_t token, int t) override;
  void block_row(int l, const F* p, int t) override;
  void keep_context_rows(int l, int n) override;
  const F* final_norm_row(const F* p) override;

  using BasicDecoderDriver<F>::config_, BasicDecoderDriver<F>::B_, BasicDecoderDriver<F>::T_,
      BasicDecoderDriver<F>::inputs_;
  std::unique_ptr<TensorOffsets> offsets_;
  std::unique_ptr<Activations> acts_;
  std::unique_ptr<Activations> inference_;
  std::unique_ptr<Cache> cache_;
  // Activation gradients, shared by all layers (each is overwritten before it is read):
  std::vector<F> dresidual_;     // [B, T, C] the residual stream, accumulated through the blocks
  std::vector<F> dsmall_;        // [B, T, C] d(ln output) / d(attention output) / d(lnf)
  std::vector<F> dlarge_;        // [B, T, 4C] d(fch) in the MLP, d(qkv) [B, T, 3C] in attention
  std::vector<F> datt_row_;      // [B, NH, T] attention backward scratch (each row's Σ p·dp)
  std::vector<F> norm_discard_;  // [2C] a frozen ln_f's gradients (LoRA), never read
};

using Gpt2Model = BasicGpt2<float>;

}  // namespace autotrain::model
