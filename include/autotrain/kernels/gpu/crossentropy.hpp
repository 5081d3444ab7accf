#pragma once
// CUDA fused softmax + cross-entropy over a padded vocabulary (mirrors kernels/crossentropy.hpp).
// Shapes: logits [N, Vp] (Vp >= V), targets [N] in [0, V) or kIgnoreTarget on the device, losses
// and lse [N] in fp32 whatever F is. Columns >= V are never read and get exactly zero gradient; an
// ignored row has loss 0 and gradient 0.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>
#include <cstdint>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/core/ignore_target.hpp"

namespace autotrain::kernels::gpu {

// losses[n] = log Σ_{v < V} exp(logits[n, v]) - logits[n, targets[n]]; lse[n] = the first term.
template <typename F>
void crossentropy_forward(float* losses, float* lse, const F* logits, const std::int32_t* targets,
                          std::size_t N, int V, int Vp, cudaStream_t stream);

// dlogits[n, v] = (softmax(logits[n, :V])[v] - [v == targets[n]]) · dloss for v < V, 0 for v >= V
// (overwritten; dlogits may alias logits); dloss times row_scale[n] (device memory) where given.
template <typename F>
void crossentropy_backward(F* dlogits, const F* logits, const float* lse,
                           const std::int32_t* targets, float dloss, std::size_t N, int V, int Vp,
                           cudaStream_t stream, float softcap = 0,
                           const float* row_scale = nullptr);
// Gemma 2's final_logit_softcapping in place (as the CPU's logit_softcap); crossentropy_backward's
// softcap then takes the cap's derivative into dlogits.
template <typename F>
void logit_softcap(F* logits, std::size_t N, int V, int Vp, float cap, cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
