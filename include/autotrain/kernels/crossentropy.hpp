#pragma once
// Fused softmax + cross-entropy over a padded vocabulary. Shapes: logits [N, Vp] (N = B·T rows,
// Vp >= V padded columns), targets [N] in [0, V) or kIgnoreTarget, losses [N], lse [N] (log-sum-exp
// of each row, saved by forward so backward needs no second reduction). Columns >= V are never
// read by the loss, and get exactly zero gradient: padding cannot change the math. A row whose
// target is kIgnoreTarget (a prompt token under completion-only loss) has loss 0 and gradient 0.
#include <cstddef>
#include <cstdint>

#include "autotrain/core/ignore_target.hpp"

namespace autotrain::kernels {

// losses[n] = log Σ_{v < V} exp(logits[n, v]) - logits[n, targets[n]] (0 for an ignored row)
template <typename F>
void crossentropy_forward(F* losses, F* lse, const F* logits, const std::int32_t* targets,
                          std::size_t N, int V, int Vp);

// dlogits[n, v] = (softmax(logits[n, :V])[v] - [v == targets[n]]) · dloss for v < V, 0 for v >= V.
// dloss is d(objective)/d(losses[n]), the same for every row, times row_scale[n] where row_scale
// is given (an objective that weighs each position's loss differently: the preference losses);
// an ignored row's gradient is 0. dlogits may alias logits.
// softcap > 0: logits are softcap · tanh(z / softcap) of the head's output z (logit_softcap), and
// dlogits is d/dz: times 1 - (logits / softcap)².
template <typename F>
void crossentropy_backward(F* dlogits, const F* logits, const F* lse, const std::int32_t* targets,
                           F dloss, std::size_t N, int V, int Vp, double softcap = 0,
                           const F* row_scale = nullptr);

// Gemma 2's final_logit_softcapping, in place: logits[n, v] = softcap · tanh(logits[n, v] /
// softcap) for v < V.
template <typename F>
void logit_softcap(F* logits, std::size_t N, int V, int Vp, double softcap);

}  // namespace autotrain::kernels
