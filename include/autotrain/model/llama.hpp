#pragma once
// The Llama-style decoder on the CPU, which the Llama family (src/model/llama_family.cpp), Phi-3
// (phi3_family.cpp) and Gemma 2 and 3 (gemma_family.cpp) run (their tensors:
// src/model/decoder_family.cpp): a family of the CPU models' driver (model/decoder_driver.hpp:
// the interface and the hook order). Its parts: the embedding lookup (scaled for Gemma), the
// blocks and the final RMSNorm; the head is lm_head, or the embeddings when tied. Training:
// llama.cpp; generation: llama_generate.cpp.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "autotrain/kernels/attention.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/decoder_driver.hpp"

namespace autotrain::model {

class KernelClock;    // src/model/kernel_clock.hpp
struct LlamaOffsets;  // src/model/llama_offsets.hpp: where each tensor sits in its unit

template <typename F>
class BasicLlama final : public BasicDecoderDriver<F> {
 public:
  // Allocates everything one micro-batch [B, T] needs (T <= block_size).
  // `recompute`: activation checkpointing (model/recompute.hpp).
  BasicLlama(const ParamLayout& layout, int B, int T, Recompute recompute = Recompute::none);
  ~BasicLlama() override;
  BasicLlama(const BasicLlama&) = delete;
  BasicLlama& operator=(const BasicLlama&) = delete;

  struct Activations;
  struct Cache;

 private:
  using Run = typename BasicDecoderDriver<F>::Run;
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
  std::size_t head_offset() const override;
  std::size_t family_activation_bytes() const override;
  void prepare_context(int n) override;  // llama_generate.cpp, as the three below
  int open_cache() override;
  void embed_row(const F* p, std::int32_t token, int t) override;
  void block_row(int l, const F* p, int t) override;
  void keep_context_rows(int l, int n) override;
  const F* final_norm_row(const F* p) override;

  // out[n, C] = the embeddings of tokens[n] (scaled by sqrt(C) with embed_scale).
  void embed(F* out, const std::int32_t* tokens, std::size_t n, const F* table) const;
  kernels::AttentionOptions attention_options(int l) const;  // layer l's scale, cap and window
  std::pair<const F*, const F*> rope_tables(int l) const;    // layer l's cos and sin
  double norm_offset() const;  // the RMSNorms' weight offset: 1 with norm_offset, else 0
  F embed_scale() const;
  // rope_cos_/rope_sin_ hold at least `positions` rows.
  void ensure_rope(int positions);

  using BasicDecoderDriver<F>::config_, BasicDecoderDriver<F>::B_, BasicDecoderDriver<F>::T_,
      BasicDecoderDriver<F>::inputs_;
  std::unique_ptr<LlamaOffsets> offsets_;
  std::unique_ptr<Activations> acts_;
  std::unique_ptr<Activations> inference_;
  std::unique_ptr<Cache> cache_;
  std::vector<F> rope_cos_, rope_sin_;              // [positions, rotary dimensions / 2]
  std::vector<F> rope_local_cos_, rope_local_sin_;  // the sliding layers' (rope_local_theta)
  int rope_positions_ = 0;
  // Activation gradients, shared by all layers (each is overwritten before it is read):
  std::vector<F> dresidual_;     // [B, T, C] the residual stream
  std::vector<F> dsmall_;        // [B, T, max(C, NH·D)] d(norm output) / d(attention output)
  std::vector<F> dwide_;         // [B, T, max(2I, QKV)] d(gate|up), d(qkv)
  std::vector<F> dmid_;          // [B, T, max(I, QKV)] d(swiglu output), d(qkv before q/k norm)
  std::vector<F> dpost_;         // [B, T, C] d(a branch's output) under sandwich norms
  std::vector<F> datt_row_;      // [B, NH, T] attention backward scratch (each row's Σ p·dp)
  std::vector<F> norm_discard_;  // [C] the final norm's gradient when its unit is frozen
};

using LlamaModel = BasicLlama<float>;

}  // namespace autotrain::model
