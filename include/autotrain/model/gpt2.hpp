#pragma once
// GPT-2 forward and backward on the CPU over the flat parameter and gradient buffers.
//
// Every activation and activation gradient is allocated at construction for a fixed micro-batch
// [B, T]; forward() and backward() allocate nothing. The model reaches parameters and gradients
// only through UnitAccess (model/unit_access.hpp), one unit at a time, in this order:
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
// Pointers returned by params/grads point at the unit's first element (ParamLayout offsets
// inside the unit locate each tensor). grads(u) may be called twice in one backward (unit 0):
// both calls must return the same accumulating buffer. Gradients are accumulated (+=), so a
// caller zeroes them once per optimizer step and can run several micro-steps in between.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "autotrain/model/config.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/profile.hpp"
#include "autotrain/model/unit_access.hpp"

namespace autotrain::model {

template <typename F>
class BasicGpt2 {
 public:
  // Allocates everything one micro-batch [B, T] needs (T <= block_size).
  BasicGpt2(const ParamLayout& layout, int B, int T);
  ~BasicGpt2();
  BasicGpt2(const BasicGpt2&) = delete;
  BasicGpt2& operator=(const BasicGpt2&) = delete;

  int batch_size() const { return B_; }
  int seq_len() const { return T_; }
  const ModelConfig& config() const { return config_; }

  // inputs, targets: [B, T] token ids in [0, vocab_size). Returns the mean loss over B·T; keeps
  // what backward needs. Also the evaluation path (just skip backward).
  F forward(BasicUnitAccess<F>& access, const std::int32_t* inputs, const std::int32_t* targets);

  // Adds d(loss_scale · mean loss)/d(params) into access.grads(); call after forward.
  // loss_scale = 1 / gradient_accumulation averages micro-steps.
  void backward(BasicUnitAccess<F>& access, F loss_scale);

  // Logits [vocab_size] of the next token after `tokens` (1 <= length <= block_size, batch 1).
  // Its buffers are allocated once, on the first call, apart from the training ones.
  std::span<const F> next_token_logits(BasicUnitAccess<F>& access,
                                       std::span<const std::int32_t> tokens);

  // Generation with a key/value cache (batch 1, inference only): after reset_cache(), each
  // feed_token() appends one token at the next position and returns the logits [vocab_size] of
  // the token after it, computing only that position (the keys and values of the earlier ones are
  // kept). At most block_size tokens fit between resets; the same logits as next_token_logits()
  // on the tokens fed so far, to rounding. Buffers are allocated on the first reset_cache().
  void reset_cache();
  std::span<const F> feed_token(BasicUnitAccess<F>& access, std::int32_t token);
  int cached_tokens() const;

  // Per-position losses [B, T] of the last forward.
  std::span<const F> losses() const;

  // Bytes of activation and activation-gradient memory held for training.
  std::size_t activation_bytes() const;

  void set_profiling(bool on);
  std::vector<ProfileEntry> profile() const;

 private:
  struct Activations;
  F run_lm_head_and_loss(BasicUnitAccess<F>& access);
  void forward_to_final_norm(BasicUnitAccess<F>& access, Activations& acts,
                             const std::int32_t* inputs, int B, int T);

  ModelConfig config_;
  int B_;
  int T_;
  std::unique_ptr<TensorOffsets> offsets_;
  std::unique_ptr<Activations> acts_;
  std::unique_ptr<Activations> inference_;
  struct Cache;
  std::unique_ptr<Cache> cache_;
  std::vector<std::int32_t> inputs_;
  std::vector<std::int32_t> targets_;
  // Activation gradients, shared by all layers (each is overwritten before it is read):
  std::vector<F> dresidual_;  // [B, T, C] the residual stream, accumulated through the blocks
  std::vector<F> dsmall_;     // [B, T, C] d(ln output) / d(attention output) / d(lnf)
  std::vector<F> dlarge_;     // [B, T, 4C] d(fch) in the MLP, d(qkv) [B, T, 3C] in attention
  std::vector<F> datt_row_;   // [B, NH, T, T] attention backward scratch (d scores)
  bool ready_for_backward_ = false;
  bool profiling_ = false;
  std::array<double, 16> profile_{};
};

using Gpt2Model = BasicGpt2<float>;

// Training FLOPs per token: 6N + 6·L·C·T, N = logical parameter count (as llm.c counts MFU).
double flops_per_token(const ModelConfig& config, int T);

}  // namespace autotrain::model
