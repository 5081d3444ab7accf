#include "autotrain/optim/optimizer.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/optim/adamw_kernel.hpp"
#include "autotrain/optim/blockwise_8bit.hpp"

namespace autotrain {

OptimizerKind parse_optimizer(std::string_view name, std::string_view source) {
  if (name == "adamw_torch" || name == "adamw_hf" || name == "adamw" ||
      name == "adamw_apex_fused" || name == "adamw_torch_fused" || name == "paged_adamw_32bit") {
    return OptimizerKind::adamw;
  }
  if (name == "adamw_8bit" || name == "adamw_bnb_8bit" || name == "paged_adamw_8bit") {
    return OptimizerKind::adamw_8bit;
  }
  if (name == "sgd") return OptimizerKind::sgd;
  throw Error(cat(source, ": unknown optimizer '", name,
                  "' (expected adamw_torch, adamw_hf, adamw, adamw_torch_fused, "
                  "paged_adamw_32bit, adamw_8bit, adamw_bnb_8bit, paged_adamw_8bit or sgd)"));
}

bool paged_optimizer(std::string_view name) {
  return name.starts_with("paged_");
}

const char* optimizer_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::adamw:
      return "adamw";
    case OptimizerKind::adamw_8bit:
      return "adamw_8bit";
    case OptimizerKind::sgd:
      return "sgd";
  }
  return "sgd";
}

bool same_optimizer_state(OptimizerKind a, OptimizerKind b) {
  return (a == OptimizerKind::sgd) == (b == OptimizerKind::sgd);
}

double optimizer_state_bytes_per_element(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::adamw:
      return 2 * sizeof(float);
    case OptimizerKind::adamw_8bit:
      return 2 * (1 + static_cast<double>(sizeof(float)) / kQuantBlock);
    case OptimizerKind::sgd:
      return sizeof(float);
  }
  return 0;
}

Optimizer::Optimizer(const OptimizerSettings& settings, std::vector<ParamSegment> segments)
    : settings_(settings), segments_(std::move(segments)) {
  for (const auto& segment : segments_) {
    AT_CHECK(segment.end >= segment.begin, "optimizer segment [", segment.begin, ", ", segment.end,
             ") is reversed");
    elements_ += segment.end - segment.begin;
  }
  if (settings_.kind == OptimizerKind::adamw_8bit) return;  // allocate_quantized, when first used
  first_moment_ = ZeroedFloats(elements_);
  if (settings_.kind == OptimizerKind::adamw) second_moment_ = ZeroedFloats(elements_);
}

size_t Optimizer::state_bytes() const {
  if (settings_.kind != OptimizerKind::adamw_8bit) return state_elements() * sizeof(float);
  return 2 * (elements_ + quant_blocks(elements_) * sizeof(float));
}

void Optimizer::allocate_quantized() {
  if (m_codes_.size() == elements_ && elements_ > 0) return;
  // Codes 0 with absmax 0 read as moments of 0, whatever the map holds at code 0.
  m_codes_.assign(elements_, 0);
  v_codes_.assign(elements_, 0);
  m_absmax_.assign(quant_blocks(elements_), 0.0f);
  v_absmax_.assign(quant_blocks(elements_), 0.0f);
}

void Optimizer::stage_moments() {
  if (settings_.kind != OptimizerKind::adamw_8bit || !first_moment_.empty()) return;
  first_moment_ = ZeroedFloats(elements_);
  second_moment_ = ZeroedFloats(elements_);
  if (m_codes_.empty()) return;  // never stepped: zeros
  dequantize_blockwise(m_codes_.data(), m_absmax_.data(), elements_, signed_dynamic_map(),
                       first_moment_.data());
  dequantize_blockwise(v_codes_.data(), v_absmax_.data(), elements_, unsigned_dynamic_map(),
                       second_moment_.data());
}

void Optimizer::load_staged_moments() {
  if (settings_.kind != OptimizerKind::adamw_8bit || first_moment_.empty()) return;
  allocate_quantized();
  requantize_blockwise(first_moment_.data(), elements_, signed_dynamic_map(), m_codes_.data(),
                       m_absmax_.data());
  requantize_blockwise(second_moment_.data(), elements_, unsigned_dynamic_map(), v_codes_.data(),
                       v_absmax_.data());
  first_moment_ = ZeroedFloats();
  second_moment_ = ZeroedFloats();
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
  const bool quantized = settings_.kind == OptimizerKind::adamw_8bit;
  if (quantized) {
    // A checkpoint's staged copies are stale from here on (a load requantized them already).
    first_moment_ = ZeroedFloats();
    second_moment_ = ZeroedFloats();
    allocate_quantized();
    pieces_.clear();
  }
  size_t state = 0;
  for (const auto& segment : segments_) {
    AT_CHECK(segment.begin >= base && segment.end - base <= params.size() &&
                 segment.end - base <= grads.size(),
             "optimizer segment [", segment.begin, ", ", segment.end, ") outside the buffer at ",
             base);
    if (quantized) {
      const float decay = segment.decay ? settings_.weight_decay : 0.0f;
      if (segment.end > segment.begin) {
        pieces_.push_back({params.data() + (segment.begin - base),
                           grads.data() + (segment.begin - base), state,
                           segment.end - segment.begin, decay});
      }
      state += segment.end - segment.begin;
      continue;
    }
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
  if (quantized) {
    adamw_8bit_update(
        pieces_, {m_codes_.data(), v_codes_.data(), m_absmax_.data(), v_absmax_.data(), elements_},
        adamw);
  }
}

}  // namespace autotrain
