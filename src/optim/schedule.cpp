#include "autotrain/optim/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "autotrain/core/error.hpp"

namespace autotrain {
namespace {

struct NamedSchedule {
  std::string_view name;
  ScheduleKind kind;
};

constexpr NamedSchedule kSchedules[] = {
    {"linear", ScheduleKind::linear},
    {"cosine", ScheduleKind::cosine},
    {"cosine_with_restarts", ScheduleKind::cosine_with_restarts},
    {"polynomial", ScheduleKind::polynomial},
    {"constant", ScheduleKind::constant},
    {"constant_with_warmup", ScheduleKind::constant_with_warmup},
    {"inverse_sqrt", ScheduleKind::inverse_sqrt},
    {"cosine_with_min_lr", ScheduleKind::cosine_with_min_lr},
    {"warmup_stable_decay", ScheduleKind::warmup_stable_decay},
};

// polynomial's end (transformers' lr_end) and power.
constexpr double kPolynomialEnd = 1e-7;
constexpr double kPolynomialPower = 1.0;
// inverse_sqrt's timescale without warmup.
constexpr double kInverseSqrtTimescale = 10000.0;

}  // namespace

ScheduleKind parse_schedule(std::string_view name, std::string_view source) {
  for (const NamedSchedule& schedule : kSchedules) {
    if (schedule.name == name) return schedule.kind;
  }
  std::string names;
  for (const NamedSchedule& schedule : kSchedules) {
    names += cat(names.empty() ? "" : ", ", schedule.name);
  }
  throw Error(cat(source, ": unknown scheduler '", name, "' (expected one of ", names, ")"));
}

LrSchedule::LrSchedule(ScheduleKind kind, double peak_lr, long long total_steps, WarmupShape warmup,
                       double min_lr_rate, StableDecay stable_decay)
    : kind_(kind),
      peak_lr_(peak_lr),
      total_steps_(std::max(1LL, total_steps)),
      warmup_steps_(kind == ScheduleKind::constant ? 0
                    : warmup.steps >= 0            ? warmup.steps
                                                   : static_cast<long long>(std::ceil(
                                                         warmup.ratio * double(std::max(1LL, total_steps))))),
      log_warmup_(warmup.log),
      min_lr_rate_(min_lr_rate),
      stable_decay_(std::move(stable_decay)) {}

double LrSchedule::lr(long long step) const {
  if (kind_ == ScheduleKind::warmup_stable_decay) return peak_lr_ * stable_decay_factor(step);
  if (step < warmup_steps_) {
    if (log_warmup_) {
      return peak_lr_ *
             std::min(1.0, std::log(double(step + 2)) / std::log(double(warmup_steps_ + 1)));
    }
    return peak_lr_ * double(step + 1) / double(warmup_steps_);
  }
  const double decay_steps = double(std::max(1LL, total_steps_ - warmup_steps_));
  const double progress = std::clamp(double(step - warmup_steps_) / decay_steps, 0.0, 1.0);
  return peak_lr_ * decay_factor(progress, step);
}

double LrSchedule::decay_factor(double progress, long long step) const {
  const double pi = std::numbers::pi;
  switch (kind_) {
    case ScheduleKind::linear:
      return 1.0 - progress;
    case ScheduleKind::cosine:
      return 0.5 * (1.0 + std::cos(pi * progress));
    case ScheduleKind::cosine_with_restarts:  // one cycle: cosine, then 0 at the end
      return progress >= 1.0 ? 0.0 : 0.5 * (1.0 + std::cos(pi * std::fmod(progress, 1.0)));
    case ScheduleKind::polynomial: {
      if (peak_lr_ <= kPolynomialEnd) return 1.0;  // transformers refuses it; hold the lr
      const double end = kPolynomialEnd / peak_lr_;
      return (1.0 - end) * std::pow(1.0 - progress, kPolynomialPower) + end;
    }
    case ScheduleKind::constant:
    case ScheduleKind::constant_with_warmup:
      return 1.0;
    case ScheduleKind::inverse_sqrt: {
      const double timescale = warmup_steps_ > 0 ? double(warmup_steps_) : kInverseSqrtTimescale;
      const double shifted = double(step) + timescale - double(warmup_steps_);
      return 1.0 / std::sqrt(std::max(shifted, 1.0) / timescale);
    }
    case ScheduleKind::cosine_with_min_lr:
      return min_lr_rate_ + (1.0 - min_lr_rate_) * 0.5 * (1.0 + std::cos(pi * progress));
    case ScheduleKind::warmup_stable_decay:
      break;  // stable_decay_factor()
  }
  return 1.0;
}

double LrSchedule::stable_decay_factor(long long step) const {
  const StableDecay& wsd = stable_decay_;
  const double pi = std::numbers::pi;
  const double floor = wsd.min_lr_ratio;
  if (step < warmup_steps_) {  // one step ahead, as the other warmups
    const double p = double(step + 1) / double(warmup_steps_);
    const double rise = wsd.warmup_type == "cosine"   ? 0.5 * (1.0 - std::cos(pi * p))
                        : wsd.warmup_type == "1-sqrt" ? 1.0 - std::sqrt(1.0 - p)
                                                      : p;
    return std::max(0.0, floor + (1.0 - floor) * rise);
  }
  const long long decay = wsd.decay_steps;
  const long long stable = wsd.stable_steps >= 0
                               ? wsd.stable_steps
                               : std::max(0LL, total_steps_ - warmup_steps_ - decay);
  if (step < warmup_steps_ + stable) return 1.0;
  if (step >= warmup_steps_ + stable + decay) return floor;
  const double p = double(step - warmup_steps_ - stable) / double(std::max(1LL, decay));
  const double fall = wsd.decay_type == "linear" ? 1.0 - p
                      : wsd.decay_type == "1-sqrt"
                          ? 1.0 - std::sqrt(p)
                          : 0.5 * (1.0 + std::cos(pi * 2.0 * wsd.num_cycles * p));
  return std::max(0.0, floor + (1.0 - floor) * fall);
}

float clip_factor(double global_norm, double max_norm) {
  if (max_norm <= 0.0 || !(global_norm > max_norm)) return 1.0f;
  return static_cast<float>(max_norm / (global_norm + 1e-6));
}

}  // namespace autotrain
