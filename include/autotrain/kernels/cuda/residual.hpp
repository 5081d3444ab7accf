#pragma once
// CUDA residual connection (mirrors kernels/residual.hpp). Shapes: all [N] (N = B·T·C).
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>

#include "autotrain/kernels/cuda/device.hpp"

namespace autotrain::kernels::gpu {

// out = inp1 + inp2
template <typename F>
void residual_forward(F* out, const F* inp1, const F* inp2, std::size_t N, cudaStream_t stream);

// dinp1 += dout; dinp2 += dout (the residual stream's gradient adds).
template <typename F>
void residual_backward(F* dinp1, F* dinp2, const F* dout, std::size_t N, cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
