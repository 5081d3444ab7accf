#include "autotrain/optim/optimizer.hpp"

#include <cmath>

#include "autotrain/core/error.hpp"

namespace autotrain {

OptimizerKind parse_optimizer(std::string_view name, std::string_view source) {
  if (name == "adamw_torch" || name == "adamw_hf" || name == "adamw" ||
      name == "adamw_apex_fused" || name == "adamw_torch_fused") {
    return OptimizerKind::adamw;
  }
  if (name == "sgd") return OptimizerKind::sgd;
  throw Error(cat(source, ": unknown optimizer '", name,
                  "' (expected adamw_torch, adamw_hf, adamw, adamw_torch_fused or sgd)"));
}

Optimizer::Optimizer(const OptimizerSettings& settings, std::vector<ParamSegment> segments)
    : settings_(settings), segments_(std::move(segments)) {
  size_t elements = 0;
  for (const auto& segment : segments_) {
    AT_CHECK(segment.end >= segment.begin, "optimizer segment [", segment.begin, ", ", segment.end,
             ") is reversed");
    elements += segment.end - segment.begin;
  }
  first_moment_ = ZeroedFloats(elements);
  if (settings_.kind == OptimizerKind::adamw) second_moment_ = ZeroedFloats(elements);
}

void Optimizer::step(std::span<float> params, std::span<const float> grads, size_t base, float lr,
                     float grad_scale) {
  ++steps_;
  const float beta1 = settings_.beta1;
  const float beta2 = settings_.beta2;
  const float eps = settings_.eps;
  // Bias corrections in double: at step 1e6 beta^t underflows float's useful range.
  const float correction1 = static_cast<float>(1.0 - std::pow(double{beta1}, double(steps_)));
  const float correction2 = static_cast<float>(1.0 - std::pow(double{beta2}, double(steps_)));
  size_t state = 0;
  for (const auto& segment : segments_) {
    AT_CHECK(segment.begin >= base && segment.end - base <= params.size() &&
                 segment.end - base <= grads.size(),
             "optimizer segment [", segment.begin, ", ", segment.end, ") outside the buffer at ",
             base);
    float* p = params.data() + (segment.begin - base);
    const float* g = grads.data() + (segment.begin - base);
    float* m = first_moment_.data() + state;
    const auto count = static_cast<long long>(segment.end - segment.begin);
    const float decay = segment.decay ? settings_.weight_decay : 0.0f;
    if (settings_.kind == OptimizerKind::adamw) {
      float* v = second_moment_.data() + state;
#pragma omp parallel for simd schedule(static)
      for (long long i = 0; i < count; ++i) {
        const float grad = g[i] * grad_scale;
        m[i] = beta1 * m[i] + (1.0f - beta1) * grad;
        v[i] = beta2 * v[i] + (1.0f - beta2) * grad * grad;
        const float m_hat = m[i] / correction1;
        const float v_hat = v[i] / correction2;
        // Decoupled weight decay (Loshchilov & Hutter), applied to the pre-update weight.
        p[i] -= lr * (m_hat / (std::sqrt(v_hat) + eps) + decay * p[i]);
      }
    } else {
      const float momentum = settings_.momentum;
      const bool first = steps_ == 1;
#pragma omp parallel for simd schedule(static)
      for (long long i = 0; i < count; ++i) {
        // torch.optim.SGD: weight decay is added to the gradient; the buffer starts as the
        // gradient.
        const float grad = g[i] * grad_scale + decay * p[i];
        m[i] = first ? grad : momentum * m[i] + grad;
        p[i] -= lr * m[i];
      }
    }
    state += static_cast<size_t>(count);
  }
}

}  // namespace autotrain
