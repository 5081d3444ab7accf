#pragma once
// Rotary position embeddings, Hugging Face convention (rotate_half, not interleaved pairs): of a
// head of HS elements the first R rotate (R even, R <= HS: partial rotary embeddings when R <
// HS; the rest pass through); with half = R / 2, element i < half pairs with element i + half
// and the pair turns by the angle θ = p · inv_freq[i] of the row's position p:
//   x'[i] = x[i]·cos θ - x[i+half]·sin θ;   x'[i+half] = x[i+half]·cos θ + x[i]·sin θ.
// Shapes: cos, sin [positions, half] (row p = position p); x holds B·T rows, row (b, t) at
// x + (b·T + t)·stride with `heads` heads of HS at offsets h·HS, so the q part and the k part of a
// packed q|k|v row are rotated by two calls on offset pointers. Row (b, t) has position pos0 + t.
#include <cstddef>

namespace autotrain::kernels {

// cos[p, i] = scale · cos(p · inv_freq[i]), sin likewise, for p < positions; computed in double.
template <typename F>
void rope_tables(F* cos, F* sin, const double* inv_freq, int positions, int half, double scale = 1);

// Rotates x in place. pos0 + T <= the tables' positions.
template <typename F>
void rope_forward(F* x, const F* cos, const F* sin, int B, int T, int heads, int HS, int R,
                  std::size_t stride, int pos0);

// The gradient through the rotation, in place: dx ← Rᵀ·dx (the rotation by -θ). The rotation
// reads nothing but its input, so the gradient overwrites the output's.
template <typename F>
void rope_backward(F* dx, const F* cos, const F* sin, int B, int T, int heads, int HS, int R,
                   std::size_t stride, int pos0);

}  // namespace autotrain::kernels
