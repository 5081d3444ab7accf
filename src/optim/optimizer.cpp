#include "autotrain/optim/optimizer.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/optim/adamw_kernel.hpp"

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

AdamWStepArgs adamw_step_args(const OptimizerSettings& settings, float lr, float grad_scale,
                              long long step) {
  AdamWStepArgs args;
  args.lr = lr;
  args.beta1 = settings.beta1;
  args.beta2 = settings.beta2;
  args.eps = settings.eps;
  args.grad_scale = grad_scale;
  args.step = step;
  return args;
}

void Optimizer::step(std::span<float> params, std::span<const float> grads, size_t base, float lr,
                     float grad_scale) {
  ++steps_;
  AdamWStepArgs adamw = adamw_step_args(settings_, lr, grad_scale, steps_);
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
      adamw.weight_decay = decay;
      adamw_update(p, g, m, second_moment_.data() + state, static_cast<size_t>(count), adamw);
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
