#pragma once
// Learning-rate schedules with linear warmup, as Hugging Face's get_scheduler defines them
// (linear, cosine, constant), over optimizer steps 0 .. total_steps-1.
#include <string_view>

namespace autotrain {

enum class ScheduleKind { linear, cosine, constant };

ScheduleKind parse_schedule(std::string_view name, std::string_view source);

class LrSchedule {
 public:
  // warmup_steps = ceil(warmup_ratio * total_steps), as AutoTrain computes it.
  LrSchedule(ScheduleKind kind, double peak_lr, long long total_steps, double warmup_ratio);

  // Learning rate of optimizer step `step` (0-based). Warmup ramps (step+1)/warmup so that the
  // first step already learns (Hugging Face's ramp starts at exactly 0).
  double lr(long long step) const;

  long long warmup_steps() const { return warmup_steps_; }
  long long total_steps() const { return total_steps_; }

 private:
  ScheduleKind kind_;
  double peak_lr_;
  long long total_steps_;
  long long warmup_steps_;
};

// Global-norm gradient clipping: the factor to multiply every gradient by so that the global
// L2 norm is at most max_norm (1 when it already is, or when max_norm <= 0 disables clipping).
float clip_factor(double global_norm, double max_norm);

}  // namespace autotrain
