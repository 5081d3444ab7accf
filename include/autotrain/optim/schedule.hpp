#pragma once
// Learning-rate schedules as transformers' get_scheduler defines them (optimization.py), over
// optimizer steps 0 .. total_steps-1, with linear warmup where the schedule has one: linear,
// cosine, cosine_with_restarts (one cycle, transformers' default), polynomial (to 1e-7, power 1),
// constant (no warmup), constant_with_warmup, inverse_sqrt (timescale = the warmup steps, or
// 10,000 without warmup) and cosine_with_min_lr (cosine down to min_lr_rate x the peak).
#include <string_view>

namespace autotrain {

enum class ScheduleKind {
  linear,
  cosine,
  cosine_with_restarts,
  polynomial,
  constant,
  constant_with_warmup,
  inverse_sqrt,
  cosine_with_min_lr,
};

// A scheduler name above; an Error naming `source`, the value and the names otherwise.
ScheduleKind parse_schedule(std::string_view name, std::string_view source);

// How the learning rate warms up: over `steps` optimizer steps when >= 0 (transformers'
// warmup_steps), else ceil(ratio * total_steps) as AutoTrain computes it; linearly, or with
// `log` as DeepSpeed's WarmupLR defaults to.
struct WarmupShape {
  double ratio = 0.0;
  long long steps = -1;
  bool log = false;
};

class LrSchedule {
 public:
  // min_lr_rate: the floor of cosine_with_min_lr, as a fraction of peak_lr.
  LrSchedule(ScheduleKind kind, double peak_lr, long long total_steps, WarmupShape warmup,
             double min_lr_rate = 0.0);
  LrSchedule(ScheduleKind kind, double peak_lr, long long total_steps, double warmup_ratio,
             double min_lr_rate = 0.0)
      : LrSchedule(kind, peak_lr, total_steps, WarmupShape{warmup_ratio}, min_lr_rate) {}

  // Learning rate of optimizer step `step` (0-based). Warmup ramps (step+1)/warmup so that the
  // first step already learns (Hugging Face's ramp starts at exactly 0); the log ramp is
  // DeepSpeed's log(s + 1) / log(warmup) one step ahead alike: log(step + 2) / log(warmup + 1).
  double lr(long long step) const;

  long long warmup_steps() const { return warmup_steps_; }
  long long total_steps() const { return total_steps_; }

 private:
  // The multiplier of peak_lr after warmup, at `progress` (0..1) of the decay and `step`.
  double decay_factor(double progress, long long step) const;

  ScheduleKind kind_;
  double peak_lr_;
  long long total_steps_;
  long long warmup_steps_;
  bool log_warmup_;
  double min_lr_rate_;
};

// Global-norm gradient clipping: the factor to multiply every gradient by so that the global
// L2 norm is at most max_norm (1 when it already is, or when max_norm <= 0 disables clipping).
float clip_factor(double global_norm, double max_norm);

}  // namespace autotrain
