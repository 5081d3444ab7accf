#pragma once
// The score head's loss and its gradient on the device (mirrors kernels/score.hpp): scores [N] in
// F (the head's output), losses [N] in fp32 whatever F is, targets [N] on the device, of which
// only kIgnoreTarget is read.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>
#include <cstdint>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/core/ignore_target.hpp"

namespace autotrain::kernels::gpu {

// losses[n] = scores[n] where targets[n] != kIgnoreTarget, else 0.
template <typename F>
void score_forward(float* losses, const F* scores, const std::int32_t* targets, std::size_t N,
                   cudaStream_t stream);

// dscores[n] = dloss · row_scale[n] (device memory; null: 1) where targets[n] != kIgnoreTarget,
// else 0 (overwritten).
template <typename F>
void score_backward(F* dscores, const std::int32_t* targets, float dloss, const float* row_scale,
                    std::size_t N, cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
