// Fused softmax + cross-entropy forward and backward over a padded vocabulary.
// Invariant: dlogits is overwritten (=); padded columns v >= V are never read and get gradient 0.
// The softmax is not stored: forward keeps each row's log-sum-exp, backward recomputes
// exp(logit - lse) while it writes the gradient in place (one pass over [N, Vp] each way).
#include "autotrain/kernels/crossentropy.hpp"

#include <cmath>
#include <limits>

#include "autotrain/kernels/fast_math.hpp"

namespace autotrain::kernels {

template <typename F>
void crossentropy_forward(F* losses, F* lse, const F* logits, const std::int32_t* targets,
                          std::size_t N, int V, int Vp) {
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t n = 0; n < static_cast<std::ptrdiff_t>(N); ++n) {
    const F* x = logits + n * Vp;
    F maxv = -std::numeric_limits<F>::infinity();
#pragma omp simd reduction(max : maxv)
    for (int v = 0; v < V; ++v) maxv = x[v] > maxv ? x[v] : maxv;
    lse[n] = maxv + std::log(sum_exp_shifted(x, V, maxv));
    losses[n] = targets[n] == kIgnoreTarget ? F(0) : lse[n] - x[targets[n]];
  }
}

template <typename F>
void crossentropy_backward(F* dlogits, const F* logits, const F* lse, const std::int32_t* targets,
                           F scalar_dloss, std::size_t N, int V, int Vp, double softcap,
                           const F* row_scale) {
  const F cap = static_cast<F>(softcap);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t n = 0; n < static_cast<std::ptrdiff_t>(N); ++n) {
    const F* x = logits + n * Vp;
    F* d = dlogits + n * Vp;
    if (targets[n] == kIgnoreTarget) {
      for (int v = 0; v < Vp; ++v) d[v] = 0;
      continue;
    }
    const F l = lse[n];
    const F dloss = row_scale != nullptr ? scalar_dloss * row_scale[n] : scalar_dloss;
    if (cap > 0) {  // x and d may be one buffer: each element is read before it is written
      const F target = x[targets[n]] / cap;
      for (int v = 0; v < V; ++v) {
        const F c = x[v] / cap;
        d[v] = exp_approx(x[v] - l) * dloss * (F(1) - c * c);
      }
      d[targets[n]] -= dloss * (F(1) - target * target);
    } else {
      exp_shifted_scaled(d, x, V, l, dloss);
      d[targets[n]] -= dloss;
    }
    for (int v = V; v < Vp; ++v) d[v] = 0;
  }
}

template <typename F>
void logit_softcap(F* logits, std::size_t N, int V, int Vp, double softcap) {
  const F cap = static_cast<F>(softcap);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t n = 0; n < static_cast<std::ptrdiff_t>(N); ++n) {
    F* x = logits + n * Vp;
    for (int v = 0; v < V; ++v) x[v] = cap * std::tanh(x[v] / cap);
  }
}

template void crossentropy_forward<float>(float*, float*, const float*, const std::int32_t*,
                                          std::size_t, int, int);
template void crossentropy_forward<double>(double*, double*, const double*, const std::int32_t*,
                                           std::size_t, int, int);
template void crossentropy_backward<float>(float*, const float*, const float*, const std::int32_t*,
                                           float, std::size_t, int, int, double, const float*);
template void crossentropy_backward<double>(double*, const double*, const double*,
                                            const std::int32_t*, double, std::size_t, int, int,
                                            double, const double*);
template void logit_softcap<float>(float*, std::size_t, int, int, double);
template void logit_softcap<double>(double*, std::size_t, int, int, double);

}  // namespace autotrain::kernels
