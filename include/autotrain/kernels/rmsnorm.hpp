#pragma once
// RMSNorm (Llama, Mistral, Qwen2/3): out = inp · rstd · weight, rstd = 1 / sqrt(mean(inp²) + eps),
// over vectors of C elements. The vectors are rows × heads: vector (r, h) starts at
// r·stride + h·C in inp, out, dinp and dout (stride >= heads·C). The plain norm over [N, C] is
// heads = 1, stride = C; Qwen3's per-head q_norm / k_norm is heads = NH (or NKV), C = HS and
// stride = the row width of the qkv buffer. weight [C] is shared by every vector; rstd
// [rows·heads] is saved by forward for backward (index r·heads + h). Sums are taken in double.
// weight_offset: Gemma's norms scale by (weight_offset + weight), their weights stored as offsets
// from 1 (weight_offset = 1); 0 elsewhere.
#include <cstddef>

namespace autotrain::kernels {

// out may not alias inp.
template <typename F>
void rmsnorm_forward(F* out, F* rstd, const F* inp, const F* weight, std::size_t rows, int heads,
                     int C, std::size_t stride, double eps, double weight_offset = 0);

// dinp += ... : the input of the block norms is the residual stream, whose gradient sums both
// paths (as layernorm_backward); a caller whose input is not the residual stream (q_norm,
// k_norm) zeroes dinp first.
// dweight[C] += ... (a parameter gradient accumulates).
template <typename F>
void rmsnorm_backward(F* dinp, F* dweight, const F* dout, const F* inp, const F* weight,
                      const F* rstd, std::size_t rows, int heads, int C, std::size_t stride,
                      double weight_offset = 0);

}  // namespace autotrain::kernels
