#pragma once
// The models' check of the token ids they are given (CPU and device model alike): each input
// must be a row of the embedding table, [0, vocab_size); a target may also be kIgnoreTarget (a
// position that carries no loss). And the loss the models report over the targets that do, and
// what a score head refuses.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "autotrain/core/error.hpp"
#include "autotrain/core/ignore_target.hpp"

namespace autotrain::model {

inline void check_tokens(const std::int32_t* tokens, std::size_t count, int vocab_size,
                         const char* what) {
  for (std::size_t i = 0; i < count; ++i) {
    AT_CHECK(tokens[i] >= 0 && tokens[i] < vocab_size, "model: ", what, "[", i, "] = ", tokens[i],
             " is not a token id in [0, vocab_size = ", vocab_size, ")");
  }
}

// Checks the targets and returns how many carry loss (those that are not kIgnoreTarget).
inline std::size_t check_targets(const std::int32_t* targets, std::size_t count, int vocab_size) {
  std::size_t carrying = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (targets[i] == kIgnoreTarget) continue;
    AT_CHECK(targets[i] >= 0 && targets[i] < vocab_size, "model: targets[", i, "] = ", targets[i],
             " is not a token id in [0, vocab_size = ", vocab_size, ") nor ", kIgnoreTarget,
             " (no loss)");
    ++carrying;
  }
  return carrying;
}

// A CPU model's forward keeps its micro-batch: the n inputs and targets checked, then copied
// into kept_inputs and kept_targets (n long each); returns how many targets carry loss.
inline std::size_t keep_batch(const std::int32_t* inputs, const std::int32_t* targets,
                              std::size_t n, int vocab_size, std::int32_t* kept_inputs,
                              std::int32_t* kept_targets) {
  check_tokens(inputs, n, vocab_size, "inputs");
  const std::size_t carrying = check_targets(targets, n, vocab_size);
  std::copy(inputs, inputs + n, kept_inputs);
  std::copy(targets, targets + n, kept_targets);
  return carrying;
}

// The mean of per-position losses over `carrying` positions (ignored ones hold 0), summed in
// order in double: the same loss for the same inputs and thread count. 0 when none carries loss.
template <typename F>
double mean_loss(const F* losses, std::size_t count, std::size_t carrying) {
  double sum = 0;
  for (std::size_t i = 0; i < count; ++i) sum += losses[i];
  return carrying == 0 ? 0.0 : sum / static_cast<double>(carrying);
}

// What a model with the score head (ModelConfig::score_head) does not do, on either device.
// Its losses are scores, whose mean nobody minimises: the objective is the caller's (the pairwise
// reward loss), through backward_weighted.
inline constexpr const char* kScoreBackward =
    "model: backward() minimises the mean loss, which for a score head (a reward model) is the "
    "mean score: weigh the scores with backward_weighted() instead";
inline constexpr const char* kScoreGeneration =
    "generation: the model has a score head (a reward model: *ForSequenceClassification), not a "
    "language-model head; it scores texts (autotrain score) and does not generate";

// d(loss_scale · mean loss)/d(the loss of one position that carries loss).
template <typename F>
F position_dloss(F loss_scale, std::size_t carrying) {
  return carrying == 0 ? F(0) : loss_scale / static_cast<F>(carrying);
}

}  // namespace autotrain::model
