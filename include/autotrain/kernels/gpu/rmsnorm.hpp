#pragma once
// CUDA RMSNorm (mirrors kernels/rmsnorm.hpp): out = inp · rstd · weight, rstd = 1 / sqrt(mean(inp²)
// + eps), over vectors of C elements. The vectors are rows × heads: vector (r, h) starts at
// r·stride + h·C in inp, out, dinp and dout (stride >= heads·C). The plain norm over [N, C] is
// heads = 1, stride = C; Qwen3's per-head q_norm / k_norm is heads = NH (or NKV), C = HS and
// stride = the row width of the qkv buffer. weight [C] is shared by every vector; rstd
// [rows·heads] (index r·heads + h) is fp32 whatever F is (float, __nv_bfloat16, __half). Sums are
// fp32 (the CPU's are double). weight_offset: Gemma's norms scale by (weight_offset + weight).
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>

#include "autotrain/core/gpu/device.hpp"

namespace autotrain::kernels::gpu {

// The widest vector the kernels take. They hold nothing per channel in registers (one warp walks
// a vector in 16-byte packs), so the bound is not structural: it is the widest shape they are
// tested for (Llama 3 405B's hidden size is 16384), and it turns a misread shape (a vocabulary
// size passed as C) into an error instead of a silent run.
inline constexpr int kRmsNormMaxChannels = 16384;

// out may not alias inp.
template <typename F>
void rmsnorm_forward(F* out, float* rstd, const F* inp, const F* weight, std::size_t rows,
                     int heads, int C, std::size_t stride, float eps, cudaStream_t stream,
                     float weight_offset = 0);

// Floats of scratch rmsnorm_backward needs: per-chunk partial sums of dweight, which make it
// deterministic without atomics.
std::size_t rmsnorm_backward_scratch_floats(std::size_t rows, int heads, int C);

// dinp += ... : the input of the block norms is the residual stream, whose gradient sums both
// paths (as layernorm_backward); a caller whose input is not the residual stream (q_norm,
// k_norm) zeroes dinp first.
// dweight[C] += ... (a parameter gradient accumulates), summed over the vectors in a fixed order.
template <typename F>
void rmsnorm_backward(F* dinp, F* dweight, const F* dout, const F* inp, const F* weight,
                      const float* rstd, float* scratch, std::size_t rows, int heads, int C,
                      std::size_t stride, cudaStream_t stream, float weight_offset = 0);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
