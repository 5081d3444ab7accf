#pragma once
// CUDA AdamW over fp32 master weights (the same update as optim/optimizer.hpp's AdamW: decoupled
// weight decay on the pre-update weight, bias corrections computed in double). Shapes: params,
// m, v [count] fp32; grads [count] fp32 (the engine reduces and accumulates gradients in fp32
// whatever the compute type); params_copy [count] of type G (float, __nv_bfloat16 or __half) or
// null: the compute copy mixed precision reads in the next forward.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>

#include "autotrain/core/gpu/device.hpp"

namespace autotrain::kernels::gpu {

struct AdamWSettings {
  float lr = 0.0f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;  // 0 for ranges that take no decay (biases, LayerNorm weights)
  float grad_scale = 1.0f;    // multiplies every gradient first (clipping, loss-scale undo)
  long long step = 1;         // 1-based step number after this update, for the bias corrections
};

template <typename G>
void adamw_update(float* params, G* params_copy, const float* grads, float* m, float* v,
                  std::size_t count, const AdamWSettings& settings, cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
