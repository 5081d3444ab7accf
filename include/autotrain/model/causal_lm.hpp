#pragma once
// A causal language model on the CPU over the flat parameter and gradient buffers: what the
// trainer's CPU replica, generation, the benchmarks and the tests drive, whatever the family
// (model/family.hpp makes one: Gpt2Model, LlamaModel).
//
// Every activation and activation gradient is allocated at construction for a fixed micro-batch
// [B, T]; forward() and backward() allocate nothing. The model reaches parameters and gradients
// only through UnitAccess (model/unit_access.hpp), one unit at a time, in its family's hook order
// (ParamLayout::hook_order(), documented in the family's header). Gradients are accumulated (+=),
// so a caller zeroes them once per optimizer step and can run several micro-steps in between.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "autotrain/model/config.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/profile.hpp"
#include "autotrain/model/recompute.hpp"
#include "autotrain/model/unit_access.hpp"

namespace autotrain::model {

template <typename F>
class BasicCausalLM {
 public:
  virtual ~BasicCausalLM() = default;

  virtual int batch_size() const = 0;
  virtual int seq_len() const = 0;
  virtual const ModelConfig& config() const = 0;

  // inputs, targets: [B, T] token ids in [0, vocab_size); a target may be kIgnoreTarget
  // (kernels/crossentropy.hpp: no loss there). Returns the mean loss over the targets that carry
  // loss (B·T of them without ignored ones; 0 when none does); keeps what backward needs. Also
  // the evaluation path (just skip backward).
  virtual F forward(BasicUnitAccess<F>& access, const std::int32_t* inputs,
                    const std::int32_t* targets) = 0;
  // Adds d(loss_scale · mean loss)/d(params) into access.grads(); call after forward.
  // loss_scale = 1 / gradient_accumulation averages micro-steps (the trainer weighs them by
  // their share of the loss-carrying targets when some are ignored).
  virtual void backward(BasicUnitAccess<F>& access, F loss_scale) = 0;
  // Adds d(loss_scale · Σ weights[i] · losses()[i])/d(params), weights [B, T]: an objective of
  // the per-position losses that the caller weighs itself (the preference losses, whose weights
  // depend on the sequences' log-probabilities: forward, read losses(), weigh, then this).
  virtual void backward_weighted(BasicUnitAccess<F>& access, F loss_scale,
                                 std::span<const F> weights) = 0;

  // Logits [vocab_size] of the next token after `tokens` (1 <= length <= block_size, batch 1).
  // Its buffers are allocated on the first call, apart from the training ones.
  virtual std::span<const F> next_token_logits(BasicUnitAccess<F>& access,
                                               std::span<const std::int32_t> tokens) = 0;

  // Generation with a key/value cache (batch 1, inference only): after reset_cache(), each
  // feed_token() appends one token at the next position and returns the logits [vocab_size] of
  // the token after it, computing only that position. At most config().generation_context()
  // tokens fit between resets; the same logits as next_token_logits() on the tokens fed so far,
  // to rounding. Buffers are allocated on the first reset_cache().
  virtual void reset_cache() = 0;
  virtual std::span<const F> feed_token(BasicUnitAccess<F>& access, std::int32_t token) = 0;
  // Right after reset_cache(): feeds all of `tokens` (1 to generation_context()) at once, as one
  // context through matrix products instead of one row at a time, leaving the cache as feeding
  // them one by one would (to rounding); returns the logits of the token after the last.
  virtual std::span<const F> prefill(BasicUnitAccess<F>& access,
                                     std::span<const std::int32_t> tokens) = 0;
  virtual int cached_tokens() const = 0;

  // Per-position losses [B, T] of the last forward. With a score head (ModelConfig::score_head,
  // a reward model) the score of each position whose target is not kIgnoreTarget (the target's
  // value is not read otherwise), 0 elsewhere; forward returns their mean, backward_weighted adds
  // d(loss_scale · Σ weights[i] · score[i])/d(params), and backward() and generation throw.
  virtual std::span<const F> losses() const = 0;
  // Bytes of activation and activation-gradient memory held for training.
  virtual std::size_t activation_bytes() const = 0;

  // Per-kernel wall time of forward and backward (bench train --profile), kept by the models'
  // KernelClock in profile_.
  void set_profiling(bool on) {
    profiling_ = on;
    profile_.fill(0);
  }
  std::vector<ProfileEntry> profile() const {
    std::vector<ProfileEntry> rows;
    for (int op = 0; op < kOpCount; ++op) {
      rows.push_back({profile_op_name(op, config()), profile_[2 * op], profile_[2 * op + 1]});
    }
    return rows;
  }

 protected:
  bool profiling_ = false;
  std::array<double, 2 * kOpCount> profile_{};  // [2 · kind + pass] seconds
};

using CausalLM = BasicCausalLM<float>;

// The layout's family's model for micro-batches [B, T] (T <= block_size). `recompute`:
// activation checkpointing (model/recompute.hpp): what forward keeps of each block and what
// backward recomputes before differentiating it (full: everything from the block's input;
// selective: the norms and the activation function), with bit-identical results.
template <typename F>
std::unique_ptr<BasicCausalLM<F>> make_causal_lm(const ParamLayout& layout, int B, int T,
                                                 Recompute recompute = Recompute::none);

}  // namespace autotrain::model
