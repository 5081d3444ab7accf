// Encoder: token embedding + position embedding.
// Invariant (as everywhere in kernels/): parameter gradients accumulate (+=), activation
// gradients are overwritten (=), except on the residual stream.
#include "autotrain/kernels/encoder.hpp"

#include <cstddef>

#include "row_loops.hpp"

namespace autotrain::kernels {

template <typename F>
void encoder_forward(F* out, const std::int32_t* inp, const F* wte, const F* wpe, int B, int T,
                     int C) {
  // out [B, T, C]; rows are independent.
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t bt = 0; bt < static_cast<std::ptrdiff_t>(B) * T; ++bt) {
    const std::ptrdiff_t t = bt % T;
    F* o = out + bt * C;
    const F* te = wte + static_cast<std::ptrdiff_t>(inp[bt]) * C;
    const F* pe = wpe + t * C;
#pragma omp simd
    for (int c = 0; c < C; ++c) o[c] = te[c] + pe[c];
  }
}

template <typename F>
void encoder_backward(F* dwte, F* dwpe, const F* dout, const std::int32_t* inp, int B, int T,
                      int C) {
  // dwpe: one thread per position sums over the batch in a fixed order (deterministic).
#pragma omp parallel for schedule(static)
  for (int t = 0; t < T; ++t) {
    F* dp = dwpe + static_cast<std::ptrdiff_t>(t) * C;
    for (int b = 0; b < B; ++b) {
      const F* d = dout + (static_cast<std::ptrdiff_t>(b) * T + t) * C;
#pragma omp simd
      for (int c = 0; c < C; ++c) dp[c] += d[c];
    }
  }
  // dwte: the same token may repeat, so rows collide; threads split the channels instead and
  // each walks every position in order (row_loops.hpp: deterministic, no atomics).
  for_each_channel_block(C, [&](int c0, int c1) {
    for (std::ptrdiff_t bt = 0; bt < static_cast<std::ptrdiff_t>(B) * T; ++bt) {
      F* dt = dwte + static_cast<std::ptrdiff_t>(inp[bt]) * C;
      const F* d = dout + bt * C;
      for (int c = c0; c < c1; ++c) dt[c] += d[c];
    }
  });
}

template void encoder_forward<float>(float*, const std::int32_t*, const float*, const float*, int,
                                     int, int);
template void encoder_forward<double>(double*, const std::int32_t*, const double*, const double*,
                                      int, int, int);
template void encoder_backward<float>(float*, float*, const float*, const std::int32_t*, int, int,
                                      int);
template void encoder_backward<double>(double*, double*, const double*, const std::int32_t*, int,
                                       int, int);

}  // namespace autotrain::kernels
