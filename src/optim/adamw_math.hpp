#pragma once
// Internal to src/optim: AdamW's arithmetic for one element, shared by the fused fp32 kernel
// (adamw_kernel.cpp) and the 8-bit one (adamw_8bit.cpp) so that both evaluate the expression of
// optim/adamw_kernel.hpp operation for operation, with the same roundings. Files that include it
// are compiled with -ffp-contract=off (CMakeLists.txt): the only fused multiply-adds are the ones
// named here.
#include <cmath>

#include "autotrain/optim/adamw_kernel.hpp"

namespace autotrain {

// The step's scalars. The bias corrections are computed in double (at step 1e6 beta^t
// underflows float's useful range) and divide in float, as Optimizer::step always did.
struct AdamWConstants {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, grad_scale;
  float correction1, correction2;  // 1 - beta1^t, 1 - beta2^t
  float eps, weight_decay;
  float minus_lr;

  explicit AdamWConstants(const AdamWStepArgs& a)
      : beta1(a.beta1),
        one_minus_beta1(1.0f - a.beta1),
        beta2(a.beta2),
        one_minus_beta2(1.0f - a.beta2),
        grad_scale(a.grad_scale),
        correction1(static_cast<float>(1.0 - std::pow(double{a.beta1}, double(a.step)))),
        correction2(static_cast<float>(1.0 - std::pow(double{a.beta2}, double(a.step)))),
        eps(a.eps),
        weight_decay(a.weight_decay),
        minus_lr(-a.lr) {}
};

// Fused multiply-adds in hardware: glibc's FP_FAST_FMAF under GCC, the target's FMA under clang
// (which does not define it).
#if defined(FP_FAST_FMAF) || defined(__FMA__)
#define AUTOTRAIN_FAST_FMAF 1
#endif

#if (defined(__AVX512F__) || defined(__AVX2__)) && !defined(AUTOTRAIN_FAST_FMAF)
#error "the vector paths fuse their multiply-adds: the scalar path must too (FP_FAST_FMAF)"
#endif

// a * b + c, one rounding where the build has fused multiply-adds (as the vector paths do).
inline float multiply_add(float a, float b, float c) {
#if defined(AUTOTRAIN_FAST_FMAF)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

// One element: m and v (in: the moments before the step; out: after it) and the new weight,
// returned. The vector paths of adamw_kernel.cpp write the same operations in intrinsics.
inline float adamw_element(const AdamWConstants& k, float p, float g, float& m, float& v) {
  const float grad = g * k.grad_scale;
  m = multiply_add(k.beta1, m, k.one_minus_beta1 * grad);
  v = multiply_add(k.beta2, v, (k.one_minus_beta2 * grad) * grad);
  const float step = (m / k.correction1) / (std::sqrt(v / k.correction2) + k.eps);
  // Decoupled weight decay (Loshchilov & Hutter), applied to the pre-update weight.
  return multiply_add(k.minus_lr, multiply_add(k.weight_decay, p, step), p);
}

}  // namespace autotrain
