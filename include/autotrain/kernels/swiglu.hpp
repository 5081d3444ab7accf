#pragma once
// The gated MLP activations: SwiGLU (Llama's), out = silu(gate) · up, silu(x) = x · sigmoid(x),
// and GeGLU (Gemma's), out = gelu_tanh(gate) · up (gelu.hpp's tanh approximation). Shapes:
// gate_up [N, 2I] (N = B·T rows, I the intermediate size), the output of one gemm over the fused
// gate_proj | up_proj weight: row n holds gate in columns 0..I-1, then up in I..2I-1;
// out, dout [N, I]; dgate_up [N, 2I] in the layout of gate_up.
#include <cstddef>

namespace autotrain::kernels {

template <typename F>
void swiglu_forward(F* out, const F* gate_up, std::size_t N, int I);

// dgate_up is overwritten (an activation gradient). It may NOT alias gate_up: the kernel is
// out of place only (gate_up is the forward's saved activation).
template <typename F>
void swiglu_backward(F* dgate_up, const F* dout, const F* gate_up, std::size_t N, int I);

// The gate of a gated MLP: SwiGLU's silu, or GeGLU's tanh-approximated GELU (Gemma's
// gelu_pytorch_tanh).
enum class GateActivation { silu, gelu_tanh };

// out = gate(gate) · up, and its backward (as swiglu_forward and swiglu_backward, which are the
// silu gate).
template <typename F>
void gated_forward(GateActivation gate, F* out, const F* gate_up, std::size_t N, int I);
template <typename F>
void gated_backward(GateActivation gate, F* dgate_up, const F* dout, const F* gate_up,
                    std::size_t N, int I);

}  // namespace autotrain::kernels
