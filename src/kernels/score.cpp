// The score head's loss and gradient (kernels/score.hpp): a mask over N positions.
#include "autotrain/kernels/score.hpp"

namespace autotrain::kernels {

template <typename F>
void score_forward(F* losses, const F* scores, const std::int32_t* targets, std::size_t N) {
  for (std::size_t n = 0; n < N; ++n) losses[n] = targets[n] == kIgnoreTarget ? F(0) : scores[n];
}

template <typename F>
void score_backward(F* dscores, const std::int32_t* targets, F dloss, const F* row_scale,
                    std::size_t N) {
  for (std::size_t n = 0; n < N; ++n) {
    const F scale = row_scale == nullptr ? F(1) : row_scale[n];
    dscores[n] = targets[n] == kIgnoreTarget ? F(0) : dloss * scale;
  }
}

template void score_forward<float>(float*, const float*, const std::int32_t*, std::size_t);
template void score_forward<double>(double*, const double*, const std::int32_t*, std::size_t);
template void score_backward<float>(float*, const std::int32_t*, float, const float*, std::size_t);
template void score_backward<double>(double*, const std::int32_t*, double, const double*,
                                     std::size_t);

}  // namespace autotrain::kernels
