#pragma once
// Residual connection. Shapes: all [N] (N = B·T·C).
#include <cstddef>

namespace autotrain::kernels {

// out = inp1 + inp2
template <typename F>
void residual_forward(F* out, const F* inp1, const F* inp2, std::size_t N);

// dinp1 += dout; dinp2 += dout: the residual stream's gradient adds (the one exception to
// "activation gradients are overwritten").
template <typename F>
void residual_backward(F* dinp1, F* dinp2, const F* dout, std::size_t N);

}  // namespace autotrain::kernels
