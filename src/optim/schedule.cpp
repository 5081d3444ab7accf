#include "autotrain/optim/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "autotrain/core/error.hpp"

namespace autotrain {

ScheduleKind parse_schedule(std::string_view name, std::string_view source) {
  if (name == "linear") return ScheduleKind::linear;
  if (name == "cosine") return ScheduleKind::cosine;
  if (name == "constant") return ScheduleKind::constant;
  throw Error(
      cat(source, ": unknown scheduler '", name, "' (expected linear, cosine or constant)"));
}

LrSchedule::LrSchedule(ScheduleKind kind, double peak_lr, long long total_steps,
                       double warmup_ratio)
    : kind_(kind),
      peak_lr_(peak_lr),
      total_steps_(std::max(1LL, total_steps)),
      warmup_steps_(
          static_cast<long long>(std::ceil(warmup_ratio * double(std::max(1LL, total_steps))))) {}

double LrSchedule::lr(long long step) const {
  if (step < warmup_steps_) return peak_lr_ * double(step + 1) / double(warmup_steps_);
  const double decay_steps = double(std::max(1LL, total_steps_ - warmup_steps_));
  const double progress = std::clamp(double(step - warmup_steps_) / decay_steps, 0.0, 1.0);
  switch (kind_) {
    case ScheduleKind::linear:
      return peak_lr_ * (1.0 - progress);
    case ScheduleKind::cosine:
      return peak_lr_ * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
    case ScheduleKind::constant:
      return peak_lr_;
  }
  return peak_lr_;
}

float clip_factor(double global_norm, double max_norm) {
  if (max_norm <= 0.0 || !(global_norm > max_norm)) return 1.0f;
  return static_cast<float>(max_norm / (global_norm + 1e-6));
}

}  // namespace autotrain
