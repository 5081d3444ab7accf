#pragma once
// CUDA LayerNorm over the last dimension (mirrors kernels/layernorm.hpp). Shapes: inp/out [N, C]
// (N = B·T rows); weight, bias [C]; mean, rstd [N] in fp32 whatever F is (float, __nv_bfloat16,
// __half).
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>

#include "autotrain/core/gpu/device.hpp"

namespace autotrain::kernels::gpu {

// The widest row the kernels take: a row lives in one warp's registers (up to 64 values a lane).
inline constexpr int kLayerNormMaxChannels = 2048;

template <typename F>
void layernorm_forward(F* out, float* mean, float* rstd, const F* inp, const F* weight,
                       const F* bias, std::size_t N, int C, cudaStream_t stream);

// Floats of scratch layernorm_backward needs for N rows of C channels (per-chunk partial sums
// that make dweight and dbias deterministic without atomics).
std::size_t layernorm_backward_scratch_floats(std::size_t N, int C);

// dinp += ... (a LayerNorm reads the residual stream, whose gradient sums both paths);
// dweight, dbias += ... (parameter gradients accumulate).
template <typename F>
void layernorm_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp, const F* weight,
                        const float* mean, const float* rstd, float* scratch, std::size_t N, int C,
                        cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
