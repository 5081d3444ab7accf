#pragma once
// Token + position embedding. Shapes: inp [B, T] token ids; wte [V, C]; wpe [T, C]; out [B, T, C].
#include <cstdint>

namespace autotrain::kernels {

// out[b, t, :] = wte[inp[b, t], :] + wpe[t, :]. Ids must be valid rows of wte (the caller checks).
template <typename F>
void encoder_forward(F* out, const std::int32_t* inp, const F* wte, const F* wpe, int B, int T,
                     int C);

// dwte[inp[b, t], :] += dout[b, t, :]; dwpe[t, :] += dout[b, t, :] (parameter gradients add).
template <typename F>
void encoder_backward(F* dwte, F* dwpe, const F* dout, const std::int32_t* inp, int B, int T,
                      int C);

}  // namespace autotrain::kernels
