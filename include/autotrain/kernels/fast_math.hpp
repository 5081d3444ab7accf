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
  // Ternaries, not std::fmin/fmax: those are library calls (NaN rules) that block vectorisation.
  x = x < -87.3f ? -87.3f : x;
  x = x > 88.3f ? 88.3f : x;
  // n = round(x / ln2) by the 1.5·2^23 trick: std::floor would stop GCC vectorising (trapping
  // math), and |x / ln2| < 2^22 keeps the trick exact. Then x = n·ln2 + r, |r| <= ln2/2.
  constexpr float kRound = 12582912.0f;
  const float n = (x * 1.44269504f + kRound) - kRound;
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

// Σ_i exp(x[i] - shift). Sixteen independent partial sums (one AVX-512 register) instead of an
// `omp simd reduction`, which GCC 12 fails to vectorise around exp_fast; the summation order is
// fixed, so the result is deterministic.
template <typename F>
inline F sum_exp_shifted(const F* x, int n, F shift) {
  constexpr int kLanes = 16;
  F lanes[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lanes[j] += exp_approx(x[i + j] - shift);
  }
  for (; i < n; ++i) lanes[0] += exp_approx(x[i] - shift);
  F sum = 0;
  for (F lane : lanes) sum += lane;
  return sum;
}

// out[i] = exp(x[i] - shift) · scale; out may alias x. Each block of 16 goes through a local
// array so the compiler needs no run-time overlap check (which in-place use would fail, falling
// back to scalar code).
template <typename F>
inline void exp_shifted_scaled(F* out, const F* x, int n, F shift, F scale) {
  constexpr int kLanes = 16;
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    F block[kLanes];
    for (int j = 0; j < kLanes; ++j) block[j] = exp_approx(x[i + j] - shift) * scale;
    for (int j = 0; j < kLanes; ++j) out[i + j] = block[j];
  }
  for (; i < n; ++i) out[i] = exp_approx(x[i] - shift) * scale;
}

}  // namespace autotrain::kernels
