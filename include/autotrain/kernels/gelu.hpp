#pragma once
// GELU, tanh approximation (GPT-2's "gelu_new"): 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))).
// Shapes: inp, out, dout, dinp [N] (N = B·T·4C in the MLP).
#include <cstddef>

namespace autotrain::kernels {

template <typename F>
void gelu_forward(F* out, const F* inp, std::size_t N);

// dinp = gelu'(inp) · dout (overwritten; dinp may alias dout).
template <typename F>
void gelu_backward(F* dinp, const F* inp, const F* dout, std::size_t N);

}  // namespace autotrain::kernels
