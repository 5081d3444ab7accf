#include "autotrain/train/loss_scaler.hpp"

#include <algorithm>
#include <cmath>

#include "autotrain/core/error.hpp"

namespace autotrain::train {

LossScaler::LossScaler(bool enabled, float initial_scale, int growth_interval)
    : enabled_(enabled), scale_(enabled ? initial_scale : 1.0f), growth_interval_(growth_interval) {
  AT_CHECK(initial_scale >= 1.0f, "loss scaler: the initial scale must be >= 1, got ",
           initial_scale);
  AT_CHECK(growth_interval >= 1, "loss scaler: the growth interval must be >= 1, got ",
           growth_interval);
}

bool LossScaler::update(double scaled_grad_norm) {
  if (!enabled_) return true;
  if (!std::isfinite(scaled_grad_norm)) {
    scale_ = std::max(1.0f, scale_ / 2.0f);
    good_steps_ = 0;
    ++skipped_;
    return false;
  }
  if (++good_steps_ >= growth_interval_) {
    // 2^24 keeps scale × (a gradient near fp16's largest normal) from overflowing fp32 itself.
    scale_ = std::min(scale_ * 2.0f, 16777216.0f);
    good_steps_ = 0;
  }
  return true;
}

void LossScaler::restore(const LossScalerState& saved) {
  skipped_ = saved.skipped_steps;
  if (!enabled_ || !saved.enabled) return;
  AT_CHECK(saved.scale >= 1.0f, "loss scaler: a saved scale must be >= 1, got ", saved.scale);
  scale_ = saved.scale;
  good_steps_ = saved.good_steps;
}

}  // namespace autotrain::train
