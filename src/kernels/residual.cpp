// Residual connection forward (kernels/residual.hpp says why there is no backward kernel).
#include "autotrain/kernels/residual.hpp"

namespace autotrain::kernels {

template <typename F>
void residual_forward(F* out, const F* inp1, const F* inp2, std::size_t N) {
#pragma omp parallel for simd schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(N); ++i) out[i] = inp1[i] + inp2[i];
}

template void residual_forward<float>(float*, const float*, const float*, std::size_t);
template void residual_forward<double>(double*, const double*, const double*, std::size_t);

}  // namespace autotrain::kernels
