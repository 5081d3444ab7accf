#pragma once
// CUDA rotary position embeddings (mirrors kernels/rope.hpp), Hugging Face convention
// (rotate_half): of a head of HS elements the first R rotate (R even, R <= HS; the rest pass
// through); with half = R / 2, element i < half pairs with element i + half and the pair turns
// by the angle of the row's position p:
//   x'[i] = x[i]·cos[p, i] - x[i+half]·sin[p, i];   x'[i+half] = x[i+half]·cos[p, i] + x[i]·sin[p,
//   i].
// Shapes: cos, sin [positions, half] fp32 device tables whatever F is (float, __nv_bfloat16,
// __half): the caller fills them on the host with kernels::rope_tables<float> and copies them
// over once. x holds B·T rows, row (b, t) at x + (b·T + t)·stride with `heads` heads of HS at
// offsets h·HS, so the q part and the k part of a packed q|k|v row are rotated by two calls on
// offset pointers. Row (b, t) has position pos0 + t; pos0 + T <= the tables' positions (not
// checked: the device tables carry no size).
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>
#include <cstdint>

#include "autotrain/core/gpu/device.hpp"

namespace autotrain::kernels::gpu {

// Rotates x in place (fp32 arithmetic, one rounding to F per element).
template <typename F>
void rope_forward(F* x, const float* cos, const float* sin, int B, int T, int heads, int HS, int R,
                  std::size_t stride, int pos0, cudaStream_t stream);

// rope_forward of `rows` rows (B = 1, T = rows, `stride` apart) at the positions *position,
// *position + 1, ... (device memory: a decoding step's, kernels/gpu/decode.hpp).
template <typename F>
void rope_forward_at(F* x, const float* cos, const float* sin, int rows, int heads, int HS, int R,
                     std::size_t stride, const std::int32_t* position, cudaStream_t stream);

// The gradient through the rotation, in place: dx ← Rᵀ·dx (the rotation by -θ). The rotation
// reads nothing but its input, so the gradient overwrites the output's.
template <typename F>
void rope_backward(F* dx, const float* cos, const float* sin, int B, int T, int heads, int HS,
                   int R, std::size_t stride, int pos0, cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
