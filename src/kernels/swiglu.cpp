// The gated MLP activations, SwiGLU and GeGLU, forward and backward: one row loop each way over a
// gate function (its value and derivative). The float path uses exp_fast / tanh_approx
// (fast_math.hpp) so the loops vectorise; the clamping keeps sigmoid finite (and in [0, 1]) for
// any gate.
// Invariant: the input gradient is overwritten (=), never accumulated.
#include "autotrain/kernels/swiglu.hpp"

#include <cstddef>

#include "autotrain/kernels/fast_math.hpp"

namespace autotrain::kernels {
namespace {

// silu(g) = g · σ(g); d silu(g) / dg = σ(g) · (1 + g · (1 - σ(g)))
struct Silu {
  template <typename F>
  static F value(F g) {
    return g * (F(1) / (F(1) + exp_approx(-g)));
  }
  template <typename F>
  static F slope(F g) {
    const F sigmoid = F(1) / (F(1) + exp_approx(-g));
    return sigmoid * (F(1) + g * (F(1) - sigmoid));
  }
};

// gelu(g) = g/2 · (1 + tanh(k·(g + a·g³))), PyTorch's approximate="tanh" (gelu.cpp's)
struct GeluTanh {
  static constexpr double k = 0.7978845608028654, a = 0.044715;
  template <typename F>
  static F value(F g) {
    return F(0.5) * g * (F(1) + tanh_approx(F(k) * (g + F(a) * g * g * g)));
  }
  template <typename F>
  static F slope(F g) {
    const F th = tanh_approx(F(k) * (g + F(a) * g * g * g));
    return F(0.5) * (F(1) + th) + F(0.5) * g * (F(1) - th * th) * F(k) * (F(1) + F(3 * a) * g * g);
  }
};

template <typename Gate, typename F>
void gated_rows(F* out, const F* gate_up, std::size_t N, int I) {
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t n = 0; n < static_cast<std::ptrdiff_t>(N); ++n) {
    const F* gate = gate_up + static_cast<std::size_t>(n) * 2 * I;
    const F* up = gate + I;
    F* o = out + static_cast<std::size_t>(n) * I;
#pragma omp simd
    for (int i = 0; i < I; ++i) o[i] = Gate::value(gate[i]) * up[i];
  }
}

template <typename Gate, typename F>
void gated_rows_backward(F* dgate_up, const F* dout, const F* gate_up, std::size_t N, int I) {
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t n = 0; n < static_cast<std::ptrdiff_t>(N); ++n) {
    const F* gate = gate_up + static_cast<std::size_t>(n) * 2 * I;
    const F* up = gate + I;
    const F* d = dout + static_cast<std::size_t>(n) * I;
    F* dgate = dgate_up + static_cast<std::size_t>(n) * 2 * I;
    F* dup = dgate + I;
#pragma omp simd
    for (int i = 0; i < I; ++i) {
      dgate[i] = d[i] * up[i] * Gate::slope(gate[i]);
      dup[i] = d[i] * Gate::value(gate[i]);
    }
  }
}

}  // namespace

template <typename F>
void gated_forward(GateActivation gate, F* out, const F* gate_up, std::size_t N, int I) {
  if (gate == GateActivation::silu) {
    gated_rows<Silu>(out, gate_up, N, I);
  } else {
    gated_rows<GeluTanh>(out, gate_up, N, I);
  }
}

template <typename F>
void gated_backward(GateActivation gate, F* dgate_up, const F* dout, const F* gate_up,
                    std::size_t N, int I) {
  if (gate == GateActivation::silu) {
    gated_rows_backward<Silu>(dgate_up, dout, gate_up, N, I);
  } else {
    gated_rows_backward<GeluTanh>(dgate_up, dout, gate_up, N, I);
  }
}

template <typename F>
void swiglu_forward(F* out, const F* gate_up, std::size_t N, int I) {
  gated_forward(GateActivation::silu, out, gate_up, N, I);
}

template <typename F>
void swiglu_backward(F* dgate_up, const F* dout, const F* gate_up, std::size_t N, int I) {
  gated_backward(GateActivation::silu, dgate_up, dout, gate_up, N, I);
}

template void swiglu_forward<float>(float*, const float*, std::size_t, int);
template void swiglu_forward<double>(double*, const double*, std::size_t, int);
template void swiglu_backward<float>(float*, const float*, const float*, std::size_t, int);
template void swiglu_backward<double>(double*, const double*, const double*, std::size_t, int);
template void gated_forward<float>(GateActivation, float*, const float*, std::size_t, int);
template void gated_forward<double>(GateActivation, double*, const double*, std::size_t, int);
template void gated_backward<float>(GateActivation, float*, const float*, const float*, std::size_t,
                                    int);
template void gated_backward<double>(GateActivation, double*, const double*, const double*,
                                     std::size_t, int);

}  // namespace autotrain::kernels
