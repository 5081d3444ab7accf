#pragma once
// CUDA GELU, tanh approximation (mirrors kernels/gelu.hpp). Shapes: all [N].
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>

#include "autotrain/core/gpu/device.hpp"

namespace autotrain::kernels::gpu {

template <typename F>
void gelu_forward(F* out, const F* inp, std::size_t N, cudaStream_t stream);

// dinp = gelu'(inp) · dout (overwritten; dinp may alias dout).
template <typename F>
void gelu_backward(F* dinp, const F* inp, const F* dout, std::size_t N, cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
