#pragma once
// The score head's loss and its gradient (a reward model, model/config.hpp's score_head): the head
// writes one score per position, scores [N]; a position whose target is kIgnoreTarget carries
// nothing, every other one carries its score as its "loss", which the caller weighs (the pairwise
// loss −log σ(r_chosen − r_rejected) is the trainer's). Targets mark positions only: their values
// are not read beyond kIgnoreTarget.
#include <cstddef>
#include <cstdint>

#include "autotrain/core/ignore_target.hpp"

namespace autotrain::kernels {

// losses[n] = scores[n] where targets[n] != kIgnoreTarget, else 0.
template <typename F>
void score_forward(F* losses, const F* scores, const std::int32_t* targets, std::size_t N);

// dscores[n] = dloss · row_scale[n] (row_scale may be null: 1) where targets[n] !=
// kIgnoreTarget, else 0 (overwritten).
template <typename F>
void score_backward(F* dscores, const std::int32_t* targets, F dloss, const F* row_scale,
                    std::size_t N);

}  // namespace autotrain::kernels
