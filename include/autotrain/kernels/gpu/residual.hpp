#pragma once
// CUDA residual connection forward (mirrors kernels/residual.hpp, which says why there is no
// backward kernel). Shapes: all [N] (N = B·T·C).
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>

#include "autotrain/core/gpu/device.hpp"

namespace autotrain::kernels::gpu {

// out = inp1 + inp2
template <typename F>
void residual_forward(F* out, const F* inp1, const F* inp2, std::size_t N, cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
