#pragma once
// Dynamic loss scaling for mixed_precision fp16 (Micikevicius et al., "Mixed Precision
// Training"): fp16 gradients underflow below 6e-8, so backward runs on loss × scale and the
// optimizer divides the scale back out. A step whose gradients overflowed (a non-finite global
// norm) is skipped and the scale halves; after `growth_interval` good steps in a row it doubles.
// bf16 and fp32 have fp32's exponent range and use no scaling (scale 1, never skip).
namespace autotrain::train {

// What a checkpoint keeps of the scaler (run_state/json/loss_scaler), so a resumed fp16 run
// continues with the scale it had.
struct LossScalerState {
  bool enabled = false;
  float scale = 1.0f;
  int good_steps = 0;  // good steps since the last change of scale
  long long skipped_steps = 0;
};

class LossScaler {
 public:
  static constexpr float kInitialScale = 65536.0f;  // 2^16, as PyTorch's GradScaler
  static constexpr int kGrowthInterval = 2000;

  explicit LossScaler(bool enabled, float initial_scale = kInitialScale,
                      int growth_interval = kGrowthInterval);

  bool enabled() const { return enabled_; }
  // What backward multiplies the loss by (1 when disabled).
  float scale() const { return scale_; }

  // Called once per optimizer step with the global norm of the scaled gradients. Returns whether
  // the step may be taken; on overflow halves the scale (never below 1) and counts the skip.
  bool update(double scaled_grad_norm);

  long long skipped_steps() const { return skipped_; }

  LossScalerState state() const { return {enabled_, scale_, good_steps_, skipped_}; }
  // Continues from a checkpoint's state. A state of a run without scaling (bf16, fp32, CPU)
  // leaves an enabled scaler at its initial scale, and the other way round.
  void restore(const LossScalerState& saved);

 private:
  bool enabled_;
  float scale_;
  int growth_interval_;
  int good_steps_ = 0;
  long long skipped_ = 0;
};

}  // namespace autotrain::train
