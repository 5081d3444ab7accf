#pragma once
// Residual connection. Shapes: all [N] (N = B·T·C). Its backward is no kernel: the models pass
// the residual stream's gradient on unchanged and LayerNorm backward adds into it (the one
// exception to "activation gradients are overwritten").
#include <cstddef>

namespace autotrain::kernels {

// out = inp1 + inp2
template <typename F>
void residual_forward(F* out, const F* inp1, const F* inp2, std::size_t N);

}  // namespace autotrain::kernels
