#pragma once
// Vectorisable exp and tanh for the float kernels. glibc's expf/tanhf are scalar calls that stop
// GCC from vectorising a loop; these are plain arithmetic, so `#pragma omp simd` loops over them
// become AVX code. Relative error of exp_fast is below 2e-7 (degree-6 polynomial on
// [-ln2/2, ln2/2]); the double kernels, used for gradient checks, keep the exact std:: functions.
#include <bit>
#include <cmath>
#include <cstdint>

namespace autotrain::kernels {

// e^x for x in float range; inputs below -87.3 give ~1e-38 rather than 0 (harmless where used:
// softmax after max-subtraction).
inline float exp_fast(float x) {
  x = std::fmin(std::fmax(x, -87.3f), 88.3f);
  const float n = std::floor(x * 1.44269504f + 0.5f);  // x = n·ln2 + r, |r| <= ln2/2
  const float r = x - n * 0.693145752f - n * 1.42860677e-6f;
  const float p =
      1.0f +
      r * (1.0f +
           r * (0.5f + r * (1.66666672e-1f +
                            r * (4.16666679e-2f + r * (8.33333377e-3f + r * 1.38888892e-3f)))));
  const auto scale = std::bit_cast<float>((static_cast<std::int32_t>(n) + 127) << 23);
  return p * scale;
}

template <typename F>
inline F exp_approx(F x) {
  if constexpr (sizeof(F) == sizeof(float)) {
    return exp_fast(x);
  } else {
    return std::exp(x);
  }
}

// tanh(u) = 1 - 2 / (e^{2u} + 1): absolute error ~1e-7 in float, saturates cleanly at ±1.
template <typename F>
inline F tanh_approx(F u) {
  if constexpr (sizeof(F) == sizeof(float)) {
    return 1.0f - 2.0f / (exp_fast(2.0f * u) + 1.0f);
  } else {
    return std::tanh(u);
  }
}

}  // namespace autotrain::kernels
