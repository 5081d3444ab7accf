// LayerNorm forward and backward.
// Invariant: parameter gradients accumulate (+=); the input gradient also accumulates (+=)
// because a LayerNorm always reads the residual stream, whose gradient sums the skip path and
// the normalised path. Every other activation gradient in kernels/ is overwritten.
#include "autotrain/kernels/layernorm.hpp"

#include <cmath>

#include "row_loops.hpp"

namespace autotrain::kernels {

template <typename F>
void layernorm_forward(F* out, F* mean, F* rstd, const F* inp, const F* weight, const F* bias,
                       std::size_t N, int C) {
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t n = 0; n < static_cast<std::ptrdiff_t>(N); ++n) {
    const F* x = inp + n * C;
    F sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int c = 0; c < C; ++c) sum += x[c];
    const F m = sum / static_cast<F>(C);
    F var = 0;
#pragma omp simd reduction(+ : var)
    for (int c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
    const F s = F(1) / std::sqrt(var / static_cast<F>(C) + static_cast<F>(kLayerNormEps));
    F* o = out + n * C;
#pragma omp simd
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[n] = m;
    rstd[n] = s;
  }
}

template <typename F>
void layernorm_backward(F* dinp, F* dweight, F* dbias, const F* dout, const F* inp, const F* weight,
                        const F* mean, const F* rstd, std::size_t N, int C) {
  // Input gradient, row by row: with x̂ = (x - mean)·rstd and g = dout·weight,
  // dx = rstd · (g - mean_c(g) - x̂ · mean_c(g · x̂)).
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t n = 0; n < static_cast<std::ptrdiff_t>(N); ++n) {
    const F* x = inp + n * C;
    const F* d = dout + n * C;
    const F m = mean[n];
    const F s = rstd[n];
    F g_mean = 0;
    F gx_mean = 0;
#pragma omp simd reduction(+ : g_mean, gx_mean)
    for (int c = 0; c < C; ++c) {
      const F g = d[c] * weight[c];
      g_mean += g;
      gx_mean += g * (x[c] - m) * s;
    }
    g_mean /= static_cast<F>(C);
    gx_mean /= static_cast<F>(C);
    F* dx = dinp + n * C;
#pragma omp simd
    for (int c = 0; c < C; ++c) {
      const F xhat = (x[c] - m) * s;
      dx[c] += s * (d[c] * weight[c] - g_mean - xhat * gx_mean);
    }
  }
  // Parameter gradients sum over rows, by channel block (row_loops.hpp).
  for_each_channel_block(C, [&](int c0, int c1) {
    F dw[kChannelBlock] = {};
    F db[kChannelBlock] = {};
    for (std::size_t n = 0; n < N; ++n) {
      const F* x = inp + n * C;
      const F* d = dout + n * C;
      const F m = mean[n];
      const F s = rstd[n];
      for (int c = c0; c < c1; ++c) {
        dw[c - c0] += d[c] * (x[c] - m) * s;
        db[c - c0] += d[c];
      }
    }
    for (int c = c0; c < c1; ++c) {
      dweight[c] += dw[c - c0];
      dbias[c] += db[c - c0];
    }
  });
}

template void layernorm_forward<float>(float*, float*, float*, const float*, const float*,
                                       const float*, std::size_t, int);
template void layernorm_forward<double>(double*, double*, double*, const double*, const double*,
                                        const double*, std::size_t, int);
template void layernorm_backward<float>(float*, float*, float*, const float*, const float*,
                                        const float*, const float*, const float*, std::size_t, int);
template void layernorm_backward<double>(double*, double*, double*, const double*, const double*,
                                         const double*, const double*, const double*, std::size_t,
                                         int);

}  // namespace autotrain::kernels
