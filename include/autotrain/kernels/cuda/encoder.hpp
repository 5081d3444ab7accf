#pragma once
// CUDA token + position embedding (mirrors kernels/encoder.hpp). Shapes: inp [B, T] token ids on
// the device; wte [V, C]; wpe [T, C]; out [B, T, C]. F is float, __nv_bfloat16 or __half.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstdint>

#include "autotrain/kernels/cuda/device.hpp"

namespace autotrain::kernels::gpu {

// out[b, t, :] = wte[inp[b, t], :] + wpe[t, :]. Ids must be valid rows of wte (the caller checks).
template <typename F>
void encoder_forward(F* out, const std::int32_t* inp, const F* wte, const F* wpe, int B, int T,
                     int C, cudaStream_t stream);

// dwte[inp[b, t], :] += dout[b, t, :]; dwpe[t, :] += dout[b, t, :]. dwpe sums the batch in a fixed
// order; dwte rows that repeat within a batch meet through atomicAdd, so dwte's rounding (not its
// value) can differ between runs.
template <typename F>
void encoder_backward(F* dwte, F* dwpe, const F* dout, const std::int32_t* inp, int B, int T, int C,
                      cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
