// SwiGLU forward and backward. The float path uses exp_fast (fast_math.hpp) so the loops
// vectorise; its clamping keeps sigmoid finite (and in [0, 1]) for any gate.
// Invariant: the input gradient is overwritten (=), never accumulated.
#include "autotrain/kernels/swiglu.hpp"

#include "autotrain/kernels/fast_math.hpp"

namespace autotrain::kernels {

template <typename F>
void swiglu_forward(F* out, const F* gate_up, std::size_t N, int I) {
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t n = 0; n < static_cast<std::ptrdiff_t>(N); ++n) {
    const F* gate = gate_up + static_cast<std::size_t>(n) * 2 * I;
    const F* up = gate + I;
    F* o = out + static_cast<std::size_t>(n) * I;
#pragma omp simd
    for (int i = 0; i < I; ++i) {
      const F sigmoid = F(1) / (F(1) + exp_approx(-gate[i]));
      o[i] = gate[i] * sigmoid * up[i];
    }
  }
}

template <typename F>
void swiglu_backward(F* dgate_up, const F* dout, const F* gate_up, std::size_t N, int I) {
  // d silu(g) / dg = σ(g) · (1 + g · (1 - σ(g)))
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t n = 0; n < static_cast<std::ptrdiff_t>(N); ++n) {
    const F* gate = gate_up + static_cast<std::size_t>(n) * 2 * I;
    const F* up = gate + I;
    const F* d = dout + static_cast<std::size_t>(n) * I;
    F* dgate = dgate_up + static_cast<std::size_t>(n) * 2 * I;
    F* dup = dgate + I;
#pragma omp simd
    for (int i = 0; i < I; ++i) {
      const F g = gate[i];
      const F sigmoid = F(1) / (F(1) + exp_approx(-g));
      dgate[i] = d[i] * up[i] * sigmoid * (F(1) + g * (F(1) - sigmoid));
      dup[i] = d[i] * g * sigmoid;
    }
  }
}

template void swiglu_forward<float>(float*, const float*, std::size_t, int);
template void swiglu_forward<double>(double*, const double*, std::size_t, int);
template void swiglu_backward<float>(float*, const float*, const float*, std::size_t, int);
template void swiglu_backward<double>(double*, const double*, const double*, std::size_t, int);

}  // namespace autotrain::kernels
