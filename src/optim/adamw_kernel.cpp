// Provisional scalar AdamW (replaced by the vectorised kernel).
#include "autotrain/optim/adamw_kernel.hpp"

#include <cmath>
#include <cstring>

namespace autotrain {
namespace {

std::uint16_t to_bf16(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}

template <typename Copy>
void update(float* p, const float* g, float* m, float* v, std::size_t n, const AdamWStepArgs& a,
            Copy copy) {
  const float c1 = static_cast<float>(1.0 - std::pow(double{a.beta1}, double(a.step)));
  const float c2 = static_cast<float>(1.0 - std::pow(double{a.beta2}, double(a.step)));
  const auto count = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static)
  for (long long i = 0; i < count; ++i) {
    const float grad = g[i] * a.grad_scale;
    m[i] = a.beta1 * m[i] + (1.0f - a.beta1) * grad;
    v[i] = a.beta2 * v[i] + (1.0f - a.beta2) * grad * grad;
    p[i] -= a.lr * ((m[i] / c1) / (std::sqrt(v[i] / c2) + a.eps) + a.weight_decay * p[i]);
    copy(i, p[i]);
  }
}

}  // namespace

void adamw_update(float* p, const float* g, float* m, float* v, std::size_t n,
                  const AdamWStepArgs& args) {
  update(p, g, m, v, n, args, [](long long, float) {});
}
void adamw_update_bf16(float* p, const float* g, float* m, float* v, std::uint16_t* copy,
                       std::size_t n, const AdamWStepArgs& args) {
  update(p, g, m, v, n, args, [copy](long long i, float x) { copy[i] = to_bf16(x); });
}
void adamw_update_fp16(float* p, const float* g, float* m, float* v, std::uint16_t* copy,
                       std::size_t n, const AdamWStepArgs& args) {
  update(p, g, m, v, n, args, [copy](long long i, float x) {
    _Float16 h = static_cast<_Float16>(x);
    std::memcpy(&copy[i], &h, 2);
  });
}

}  // namespace autotrain
