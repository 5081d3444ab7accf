#pragma once
// LayerNorm over the last dimension. Shapes: inp/out [N, C] (N = B·T rows); weight, bias [C];
// mean, rstd [N] saved by forward for backward.
#include <cstddef>

namespace autotrain::kernels {

inline constexpr double kLayerNormEps = 1e-5;  // as GPT-2 / torch.nn.LayerNorm

template <typename F>
void layernorm_forward(F* out, F* mean, F* rstd, const F* inp, const F* weight, const F* bias,
                       std::size_t N, int C);

// dinp += ... : a LayerNorm's input is the residual stream, whose gradient sums both paths.
// dweight, dbias += ... (parameter gradients accumulate).
template <typename F>
void layernorm_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp, const F* weight,
                        const F* mean, const F* rstd, std::size_t N, int C);

}  // namespace autotrain::kernels
