// GELU (tanh approximation) forward and backward.
// Invariant: the input gradient is overwritten (=), never accumulated.
#include "autotrain/kernels/gelu.hpp"

#include <cmath>

#include "autotrain/kernels/fast_math.hpp"

namespace autotrain::kernels {
namespace {
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;
}  // namespace

template <typename F>
void gelu_forward(F* out, const F* inp, std::size_t N) {
  const F k = static_cast<F>(kSqrt2OverPi);
  const F a = static_cast<F>(kCubic);
#pragma omp parallel for simd schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(N); ++i) {
    const F x = inp[i];
    out[i] = F(0.5) * x * (F(1) + tanh_approx(k * (x + a * x * x * x)));
  }
}

template <typename F>
void gelu_backward(F* dinp, const F* inp, const F* dout, std::size_t N) {
  const F k = static_cast<F>(kSqrt2OverPi);
  const F a = static_cast<F>(kCubic);
#pragma omp parallel for simd schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(N); ++i) {
    const F x = inp[i];
    const F th = tanh_approx(k * (x + a * x * x * x));
    const F sech2 = F(1) - th * th;
    const F grad = F(0.5) * (F(1) + th) + F(0.5) * x * sech2 * k * (F(1) + F(3) * a * x * x);
    dinp[i] = grad * dout[i];
  }
}

template void gelu_forward<float>(float*, const float*, std::size_t);
template void gelu_forward<double>(double*, const double*, std::size_t);
template void gelu_backward<float>(float*, const float*, const float*, std::size_t);
template void gelu_backward<double>(double*, const double*, const double*, std::size_t);

}  // namespace autotrain::kernels
