#pragma once
// CUDA AdamW over fp32 master weights (the same update as optim/optimizer.hpp's AdamW: decoupled
// weight decay on the pre-update weight, bias corrections computed in double). Shapes: params,
// m, v [count] fp32; grads [count] fp32 (the engine reduces and accumulates gradients in fp32
// whatever the compute type); params_copy [count] of type G (float, __nv_bfloat16 or __half) or
// null: the compute copy mixed precision reads in the next forward.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>
#include <cstdint>

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

// The 8-bit AdamW (optim/adamw_8bit.hpp) on the device: one CUDA block per block of
// kAdamW8bitBlock state elements. It dequantizes the block's m and v (map[code] * absmax), updates
// every element in fp32 with the CPU kernel's operations (fmaf where it fuses, IEEE division and
// square root: the same bits), reduces the block's new absmaxes in shared memory and requantizes
// (the nearest entry of the map in shared memory, a tie to the lower one).
inline constexpr std::size_t kAdamW8bitBlock = 2048;

// A run [begin, end) of the range (offsets from its first element) that the optimizer updates,
// with or without weight decay. Elements in no run (padding) keep their weight and zero moments.
struct AdamW8bitRun {
  unsigned long long begin = 0;
  unsigned long long end = 0;
  int decay = 0;
};

// params, grads [count] fp32, params_copy [count] G or null; m, v [count] codes; m_absmax,
// v_absmax [ceil(count / 2048)]; runs [run_count] (device memory, sorted); maps [512] (device:
// the signed map for m, then the unsigned one for v). settings.weight_decay applies to the runs
// with decay.
template <typename G>
void adamw_8bit_update(float* params, G* params_copy, const float* grads, std::uint8_t* m,
                       std::uint8_t* v, float* m_absmax, float* v_absmax, std::size_t count,
                       const AdamW8bitRun* runs, int run_count, const float* maps,
                       const AdamWSettings& settings, cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
