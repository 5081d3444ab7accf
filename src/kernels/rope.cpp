// Rotary position embeddings forward and backward, in place, over B·T rows. Threads split the
// rows; each row's pairs (i, i + half) are independent, so the inner loop is two contiguous
// streams of half elements and vectorises.
#include "autotrain/kernels/rope.hpp"

#include <cmath>

#include "autotrain/core/error.hpp"

namespace autotrain::kernels {
namespace {

// direction +1 rotates by θ (forward), -1 by -θ (backward: the transposed rotation).
template <typename F>
void rotate(F* x, const F* cos, const F* sin, int B, int T, int heads, int HS, int R,
            std::size_t stride, int pos0, F direction) {
  AT_CHECK(R > 0 && R % 2 == 0 && R <= HS,
           "rope: the rotary dimensions must be even, positive and at most the head size ", HS,
           ", got ", R);
  const int half = R / 2;
#pragma omp parallel for schedule(static)
  for (int bt = 0; bt < B * T; ++bt) {
    const auto p = static_cast<std::size_t>(pos0 + bt % T);
    const F* c = cos + p * half;
    const F* s = sin + p * half;
    F* row = x + static_cast<std::size_t>(bt) * stride;
    for (int h = 0; h < heads; ++h) {
      F* lo = row + static_cast<std::size_t>(h) * HS;
      F* hi = lo + half;
#pragma omp simd
      for (int i = 0; i < half; ++i) {
        const F a = lo[i];
        const F b = hi[i];
        const F si = direction * s[i];
        lo[i] = a * c[i] - b * si;
        hi[i] = b * c[i] + a * si;
      }
    }
  }
}

}  // namespace

template <typename F>
void rope_tables(F* cos, F* sin, const double* inv_freq, int positions, int half, double scale) {
#pragma omp parallel for schedule(static)
  for (int p = 0; p < positions; ++p) {
    for (int i = 0; i < half; ++i) {
      const double angle = p * inv_freq[i];
      const std::size_t at = static_cast<std::size_t>(p) * half + i;
      cos[at] = static_cast<F>(scale * std::cos(angle));
      sin[at] = static_cast<F>(scale * std::sin(angle));
    }
  }
}

template <typename F>
void rope_forward(F* x, const F* cos, const F* sin, int B, int T, int heads, int HS, int R,
                  std::size_t stride, int pos0) {
  rotate(x, cos, sin, B, T, heads, HS, R, stride, pos0, F(1));
}

template <typename F>
void rope_backward(F* dx, const F* cos, const F* sin, int B, int T, int heads, int HS, int R,
                   std::size_t stride, int pos0) {
  rotate(dx, cos, sin, B, T, heads, HS, R, stride, pos0, F(-1));
}

template void rope_tables<float>(float*, float*, const double*, int, int, double);
template void rope_tables<double>(double*, double*, const double*, int, int, double);
template void rope_forward<float>(float*, const float*, const float*, int, int, int, int, int,
                                  std::size_t, int);
template void rope_forward<double>(double*, const double*, const double*, int, int, int, int, int,
                                   std::size_t, int);
template void rope_backward<float>(float*, const float*, const float*, int, int, int, int, int,
                                   std::size_t, int);
template void rope_backward<double>(double*, const double*, const double*, int, int, int, int, int,
                                    std::size_t, int);

}  // namespace autotrain::kernels
