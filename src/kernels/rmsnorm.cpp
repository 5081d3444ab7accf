// RMSNorm forward and backward.
// Invariant: parameter gradients accumulate (+=); the input gradient also accumulates (+=), as in
// layernorm_backward, because the block norms read the residual stream. Every sum (mean of
// squares, the backward's dot products, dweight) is taken in double, so float inputs lose
// nothing to the reduction; the per-element products stay in F.
#include "autotrain/kernels/rmsnorm.hpp"

#include <cmath>

#include "row_loops.hpp"

namespace autotrain::kernels {

template <typename F>
void rmsnorm_forward(F* out, F* rstd, const F* inp, const F* weight, std::size_t rows, int heads,
                     int C, std::size_t stride, double eps, double weight_offset) {
  const F w0 = static_cast<F>(weight_offset);
  for_each_head_vector(rows, heads, C, stride, [&](std::size_t first, std::size_t vector) {
    const F* x = inp + first;
    double sum_squares = 0;
#pragma omp simd reduction(+ : sum_squares)
    for (int c = 0; c < C; ++c) sum_squares += static_cast<double>(x[c]) * x[c];
    const F s = static_cast<F>(1.0 / std::sqrt(sum_squares / C + eps));
    F* o = out + first;
#pragma omp simd
    for (int c = 0; c < C; ++c) o[c] = x[c] * s * (w0 + weight[c]);
    rstd[vector] = s;
  });
}

template <typename F>
void rmsnorm_backward(F* dinp, F* dweight, const F* dout, const F* inp, const F* weight,
                      const F* rstd, std::size_t rows, int heads, int C, std::size_t stride,
                      double weight_offset) {
  const F w0 = static_cast<F>(weight_offset);
  // Input gradient, vector by vector: with x̂ = x·rstd and g = dout·weight,
  // dx = rstd · (g - x̂ · mean_c(g · x̂)) (the weight: w0 + weight).
  for_each_head_vector(rows, heads, C, stride, [&](std::size_t first, std::size_t vector) {
    const F* x = inp + first;
    const F* d = dout + first;
    const F s = rstd[vector];
    double gx_sum = 0;
#pragma omp simd reduction(+ : gx_sum)
    for (int c = 0; c < C; ++c) gx_sum += static_cast<double>(d[c] * (w0 + weight[c])) * (x[c] * s);
    const F gx_mean = static_cast<F>(gx_sum / C);
    F* dx = dinp + first;
#pragma omp simd
    for (int c = 0; c < C; ++c) dx[c] += s * (d[c] * (w0 + weight[c]) - x[c] * s * gx_mean);
  });
  // dweight sums over every vector, by channel block (row_loops.hpp).
  const std::size_t vectors = rows * static_cast<std::size_t>(heads);
  for_each_channel_block(C, [&](int c0, int c1) {
    double dw[kChannelBlock] = {};
    for (std::size_t v = 0; v < vectors; ++v) {
      const std::size_t first = (v / heads) * stride + (v % heads) * static_cast<std::size_t>(C);
      const F* x = inp + first;
      const F* d = dout + first;
      const F s = rstd[v];
      for (int c = c0; c < c1; ++c) dw[c - c0] += static_cast<double>(d[c]) * (x[c] * s);
    }
    for (int c = c0; c < c1; ++c) dweight[c] += static_cast<F>(dw[c - c0]);
  });
}

template void rmsnorm_forward<float>(float*, float*, const float*, const float*, std::size_t, int,
                                     int, std::size_t, double, double);
template void rmsnorm_forward<double>(double*, double*, const double*, const double*, std::size_t,
                                      int, int, std::size_t, double, double);
template void rmsnorm_backward<float>(float*, float*, const float*, const float*, const float*,
                                      const float*, std::size_t, int, int, std::size_t, double);
template void rmsnorm_backward<double>(double*, double*, const double*, const double*,
                                       const double*, const double*, std::size_t, int, int,
                                       std::size_t, double);

}  // namespace autotrain::kernels
