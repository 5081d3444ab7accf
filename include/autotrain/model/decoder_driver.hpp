#pragma once
// The CPU models' driver (model/gpt2.hpp and llama.hpp are its families): what every decoder-only
// family does around its blocks, written once: the unit hook order of forward, backward and
// inference (model/unit_access.hpp), activation checkpointing's recompute of a block before its
// backward (model/recompute.hpp: the whole block, or its cheap tensors), the LM head (the
// embeddings when tied) and its final soft cap, the cross-entropy and its gradient (or a score head
// and its scores: model/config.hpp's score_head), the losses and their mean, the key/value cache's
// length and checks, and the profile's clock. A family supplies its buffers and its parts: the
// embedding, a block and the final norm, forward and backward, for a micro-batch, a context and one
// cached row. The hook order: model/hook_order.hpp.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "autotrain/model/causal_lm.hpp"

namespace autotrain::model {

class KernelClock;  // src/model/kernel_clock.hpp

template <typename F>
class BasicDecoderDriver : public BasicCausalLM<F> {
 public:
  int batch_size() const override { return B_; }
  int seq_len() const override { return T_; }
  const ModelConfig& config() const override { return config_; }
  F forward(BasicUnitAccess<F>& access, const std::int32_t* inputs,
            const std::int32_t* targets) final;
  void backward(BasicUnitAccess<F>& access, F loss_scale) final;
  void backward_weighted(BasicUnitAccess<F>& access, F loss_scale,
                         std::span<const F> weights) final;
  std::span<const F> next_token_logits(BasicUnitAccess<F>& access,
                                       std::span<const std::int32_t> tokens) final;
  void reset_cache() final;
  std::span<const F> feed_token(BasicUnitAccess<F>& access, std::int32_t token) final;
  std::span<const F> prefill(BasicUnitAccess<F>& access,
                             std::span<const std::int32_t> tokens) final;
  int cached_tokens() const final { return cache_length_; }
  std::span<const F> losses() const final { return {losses_.data(), losses_.size()}; }
  std::size_t activation_bytes() const final;

 protected:
  // Checks B >= 1 and 1 <= T <= block_size (`positions_key`: config.json's name for it).
  BasicDecoderDriver(const ModelConfig& config, int B, int T, Recompute recompute,
                     const char* positions_key);

  // Which activations a part runs on: the micro-batch's (kept for backward) or a context's.
  enum class Run { training, inference };

  // The family's parts, in the driver's order. The block parts lap `clock` after each kernel;
  // the driver times the others.
  // Unit 0's parameters and tokens [B, T] -> the stream into block 0.
  virtual void embed_forward(Run run, const F* p, const std::int32_t* tokens, int B, int T) = 0;
  // Block l from the stream into it to the stream out of it (also the recompute before its
  // backward: the same kernels on the same inputs, the same bits), with the unit's linear adapter
  // (model/linear_adapter.hpp) after each linear when there is one.
  virtual void block_forward(Run run, int l, const F* p, BasicLinearAdapter<F>* adapter, int B,
                             int T, KernelClock& clock) = 0;
  // Selective recompute: block l's cheap tensors (model/recompute.hpp: the norms' outputs and the
  // activation function's) from the tensors it kept, with the kernels its forward ran them with.
  virtual void block_recompute(int l, const F* p, KernelClock& clock) = 0;
  // The final norm of the last block's output; returns it, [B, T, C]: the head's input.
  virtual const F* final_norm_forward(Run run, const F* p, int B, int T) = 0;
  // dnormed() -> d(the last block's output), the residual stream's gradient, which it zeroes
  // first; g is null when the unit is frozen.
  virtual void final_norm_backward(const F* p, F* g) = 0;
  // d(the stream out of block l) -> d(the stream into it), gradients into g.
  virtual void block_backward(int l, const F* p, F* g, BasicLinearAdapter<F>* adapter,
                              KernelClock& clock) = 0;
  // d(the stream into block 0) -> unit 0's gradients (the micro-batch's tokens: inputs_).
  virtual void embed_backward(F* g) = 0;
  // [B, T, C] the head's input gradient, which final_norm_backward reads.
  virtual F* dnormed() = 0;
  // The head's offset in its unit.
  virtual std::size_t head_offset() const = 0;
  // Bytes of the family's training activations and their gradients.
  virtual std::size_t family_activation_bytes() const = 0;

  // A context of n tokens: the inference activations hold n positions.
  virtual void prepare_context(int n) = 0;
  // The key/value cache, allocated on the first call; returns its capacity in positions.
  virtual int open_cache() = 0;
  // Row t of the cache: its token's embedding into the row's stream, block l (its cache rows
  // 0..t - 1 read, row t written), the final norm (returned, [C]).
  virtual void embed_row(const F* p, std::int32_t token, int t) = 0;
  virtual void block_row(int l, const F* p, int t) = 0;
  virtual const F* final_norm_row(const F* p) = 0;
  // Right after block l's inference forward over a context of n tokens (prefill): its cache rows
  // 0..n - 1 from that context's, as block_row would have written them.
  virtual void keep_context_rows(int l, int n) = 0;

  ModelConfig config_;
  int B_;
  int T_;
  Recompute recompute_;
  std::vector<std::int32_t> inputs_, targets_;  // [B, T] the last forward's

 private:
  // Embedding, blocks and final norm of tokens [B, T]; returns the final norm's output and the
  // parameters of the head's unit, acquired (its release is the caller's). after_block(l), where
  // given, runs after block l.
  std::pair<const F*, const F*> forward_to_final_norm(
      BasicUnitAccess<F>& access, Run run, const std::int32_t* tokens, int B, int T,
      const std::function<void(int)>& after_block = nullptr);
  // logits[rows, Vp] = normed[rows, C] · head[Vp, C]ᵀ, then the final soft cap (the score head:
  // scores[rows] = normed · score.weightᵀ).
  void head_forward(const F* normed, const F* p, F* logits, std::size_t rows) const;
  // dnormed = dlogits · head; dhead += dlogitsᵀ · normed unless g is null (frozen).
  void head_backward(const F* p, F* g, KernelClock& clock);
  // Backward with dloss the derivative of the objective by each position's loss, times
  // row_scale[position] where given.
  void backward_rows(BasicUnitAccess<F>& access, F dloss, const F* row_scale);

  std::size_t loss_positions_ = 0;  // targets of the last forward that carry loss
  bool ready_for_backward_ = false;
  const F* normed_ = nullptr;      // the last training forward's final norm output
  std::vector<F> logits_;          // [B, T, Vp] ([B, T] scores); dlogits once backward starts
  std::vector<F> lse_, losses_;    // [B, T]
  std::vector<F> context_logits_;  // [Vp] next_token_logits'
  std::vector<F> cache_logits_;    // [Vp] feed_token's
  int cache_capacity_ = 0;         // 0 until reset_cache()
  int cache_length_ = 0;
};

}  // namespace autotrain::model
