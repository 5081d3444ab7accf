#pragma once
// Learning-rate schedules as transformers' get_scheduler defines them (optimization.py), over
// optimizer steps 0 .. total_steps-1, with linear warmup where the schedule has one: linear,
// cosine, cosine_with_restarts (one cycle, transformers' default), polynomial (to 1e-7, power 1),
// constant (no warmup), constant_with_warmup, inverse_sqrt (timescale = the warmup steps, or
// 10,000 without warmup), cosine_with_min_lr (cosine down to min_lr_rate x the peak) and
// warmup_stable_decay (its lr_scheduler_kwargs: StableDecay).
#include <string>
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
  warmup_stable_decay,
};

// A scheduler name above; an Error naming `source`, the value and the names otherwise.
ScheduleKind parse_schedule(std::string_view name, std::string_view source);

// warmup_stable_decay's lr_scheduler_kwargs, as transformers' get_wsd_schedule takes them:
// warmup (shaped by warmup_type), the peak for stable_steps, then decay_steps down to
// min_lr_ratio x the peak, where it stays.
struct StableDecay {
  long long decay_steps = -1;          // num_decay_steps: required
  long long stable_steps = -1;         // num_stable_steps; -1 = the steps warmup and decay leave
  std::string warmup_type = "linear";  // linear, cosine or 1-sqrt
  std::string decay_type = "cosine";   // linear, cosine or 1-sqrt
  double min_lr_ratio = 0.0;
  double num_cycles = 0.5;  // of the cosine decay
};

// transformers' lr_scheduler_kwargs (a JSON object; "" = none) for scheduler `kind`: only
// warmup_stable_decay takes any (and needs num_decay_steps). Throws Error naming `source`, the
// key and what was expected.
StableDecay parse_scheduler_kwargs(ScheduleKind kind, std::string_view json_text,
                                   std::string_view source);

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
             double min_lr_rate = 0.0, StableDecay stable_decay = {});
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
  // warmup_stable_decay's multiplier of peak_lr at `step`, its warmup included.
  double stable_decay_factor(long long step) const;

  ScheduleKind kind_;
  double peak_lr_;
  long long total_steps_;
  long long warmup_steps_;
  bool log_warmup_;
  double min_lr_rate_;
  StableDecay stable_decay_;
};

// Global-norm gradient clipping: the factor to multiply every gradient by so that the global
// L2 norm is at most max_norm (1 when it already is, or when max_norm <= 0 disables clipping).
float clip_factor(double global_norm, double max_norm);

}  // namespace autotrain
