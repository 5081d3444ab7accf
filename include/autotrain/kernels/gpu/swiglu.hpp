#pragma once
// CUDA SwiGLU, the Llama MLP's activation (mirrors kernels/swiglu.hpp): out = silu(gate) · up,
// silu(x) = x · sigmoid(x). Shapes: gate_up [N, 2I] (N = B·T rows, I the intermediate size), the
// output of one gemm over the fused gate_proj | up_proj weight: row n holds gate in columns
// 0..I-1, then up in I..2I-1; out, dout [N, I]; dgate_up [N, 2I] in the layout of gate_up.
// F is float, __nv_bfloat16 or __half; the arithmetic is fp32.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/swiglu.hpp"  // GateActivation

namespace autotrain::kernels::gpu {

template <typename F>
void swiglu_forward(F* out, const F* gate_up, std::size_t N, int I, cudaStream_t stream);

// dgate_up is overwritten (an activation gradient). It may NOT alias gate_up: the kernel is
// out of place only (gate_up is the forward's saved activation).
template <typename F>
void swiglu_backward(F* dgate_up, const F* dout, const F* gate_up, std::size_t N, int I,
                     cudaStream_t stream);
// Any gate (kernels/swiglu.hpp: SwiGLU's silu, GeGLU's gelu_tanh), in the same layout and with
// the same contract.
template <typename F>
void gated_forward(GateActivation gate, F* out, const F* gate_up, std::size_t N, int I,
                   cudaStream_t stream);
template <typename F>
void gated_backward(GateActivation gate, F* dgate_up, const F* dout, const F* gate_up,
                    std::size_t N, int I, cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
